interface CallOptions { connection?: string }
declare const linear: {
  /** Get information about the currently authenticated user */
  linearGetViewer(input?: Record<string, unknown>, options?: CallOptions): Promise<linear.LinearGetViewerResult>;
  /** Get information about the current Linear organization */
  linearGetOrganization(input?: Record<string, unknown>, options?: CallOptions): Promise<linear.LinearGetOrganizationResult>;
  /** Get a list of users in the Linear organization */
  linearGetUsers(input?: Record<string, unknown>, options?: CallOptions): Promise<linear.LinearGetUsersResult>;
  /** Get a list of issue labels from Linear */
  linearGetLabels(input?: Record<string, unknown>, options?: CallOptions): Promise<linear.LinearGetLabelsResult>;
  /** Get a list of teams from Linear */
  linearGetTeams(input?: Record<string, unknown>, options?: CallOptions): Promise<linear.LinearGetTeamsResult>;
  /** Get workflow states for a team */
  linearGetWorkflowStates(input: {
    /** ID of the team to get workflow states for */
    teamId: string;
    /** Whether to include archived states (default: false) */
    includeArchived?: boolean;
  }, options?: CallOptions): Promise<linear.LinearGetWorkflowStatesResult>;
  /** Create a new workflow state */
  linearCreateWorkflowState(input: {
    /** Workflow state name */
    name: string;
    /** Team that owns the workflow state */
    teamId: string;
    /** Workflow state type */
    type: string;
    /** Workflow state color */
    color: string;
    /** Optional workflow state description */
    description?: string;
    /** Optional position in the workflow */
    position?: number;
  }, options?: CallOptions): Promise<linear.LinearCreateWorkflowStateResult>;
  /** Update a workflow state. */
  linearUpdateWorkflowState(input: {
    /** ID of the workflow state to update */
    id: string;
    name?: string;
    color?: string | null;
    description?: string | null;
    position?: number;
  }, options?: CallOptions): Promise<linear.LinearUpdateWorkflowStateResult>;
  /** Update team settings */
  linearUpdateTeam(input: {
    /** ID of the team to update */
    id: string;
    name?: string;
    key?: string;
    description?: string | null;
    color?: string | null;
    icon?: string | null;
    timezone?: string;
    parentId?: string;
    private?: boolean;
    visibility?: "public" | "private";
  }, options?: CallOptions): Promise<linear.LinearUpdateTeamResult>;
  /** Get team memberships */
  linearGetTeamMemberships(input: {
    /** ID of the team to inspect */
    teamId: string;
    /** Maximum number of memberships to return (default: 25) */
    limit?: number;
    /** Include archived memberships */
    includeArchived?: boolean;
    /** Sort memberships by created or updated date */
    orderBy?: "createdAt" | "updatedAt";
  }, options?: CallOptions): Promise<linear.LinearGetTeamMembershipsResult>;
  /** Create a new team */
  linearCreateTeam(input: {
    /** Team name */
    name: string;
    key?: string;
    description?: string | null;
    color?: string | null;
    icon?: string | null;
    timezone?: string;
    parentId?: string;
    private?: boolean;
    visibility?: "public" | "private";
  }, options?: CallOptions): Promise<linear.LinearCreateTeamResult>;
  /** Archive a team */
  linearArchiveTeam(input: {
    /** ID of the team to archive */
    id: string;
  }, options?: CallOptions): Promise<linear.LinearArchiveTeamResult>;
  /** Add a user to a team */
  linearAddUserToTeam(input: {
    /** ID of the team to update */
    teamId: string;
    /** ID of the user to add */
    userId: string;
    /** Whether the user should be a team owner */
    owner?: boolean;
    /** Optional membership sort order */
    sortOrder?: number;
  }, options?: CallOptions): Promise<linear.LinearAddUserToTeamResult>;
  /** Remove a user from a team */
  linearRemoveUserFromTeam(input: {
    /** ID of the team to update */
    teamId: string;
    /** ID of the user to remove */
    userId: string;
    /** Also leave parent teams when removing membership */
    alsoLeaveParentTeams?: boolean;
  }, options?: CallOptions): Promise<linear.LinearRemoveUserFromTeamResult>;
  /** Update a user's role in a team. */
  linearUpdateTeamMembership(input: {
    /** ID of the team membership to update */
    id: string;
    owner?: boolean;
    sortOrder?: number | null;
  }, options?: CallOptions): Promise<linear.LinearUpdateTeamMembershipResult>;
  /** Get labels for a specific team */
  linearGetTeamLabels(input: {
    /** ID of the team to inspect */
    teamId: string;
    /** Maximum number of labels to return (default: 25) */
    limit?: number;
    /** Include archived labels */
    includeArchived?: boolean;
    /** Sort labels by created or updated date */
    orderBy?: "createdAt" | "updatedAt";
  }, options?: CallOptions): Promise<linear.LinearGetTeamLabelsResult>;
  /** Create a new label for a team */
  linearCreateTeamLabel(input: {
    /** ID of the team that owns the label */
    teamId: string;
    /** Label name */
    name: string;
    /** Label color */
    color?: string;
    /** Optional label description */
    description?: string;
    /** Optional parent label ID */
    parentId?: string;
  }, options?: CallOptions): Promise<linear.LinearCreateTeamLabelResult>;
  /** Get a list of projects from Linear */
  linearGetProjects(input?: Record<string, unknown>, options?: CallOptions): Promise<linear.LinearGetProjectsResult>;
  /** Get details for a specific Linear project by ID */
  linearGetProjectById(input: {
    /** ID or slug of the project to retrieve */
    id: string;
  }, options?: CallOptions): Promise<linear.LinearGetProjectByIdResult>;
  /** Create a new project in Linear */
  linearCreateProject(input: {
    /** Name of the project */
    name: string;
    /** IDs of the teams this project belongs to */
    teamIds: string[];
    /** Short summary of the project */
    description?: string;
    /** Content of the project (Markdown supported) */
    content?: string;
    /** Initial project status by lifecycle type/name (e.g., 'planned', 'started') or project status UUID */
    state?: string;
    /** Project start date */
    startDate?: string;
    /** Project target date */
    targetDate?: string;
    /** ID of the project lead */
    leadId?: string;
    /** IDs of users assigned as project members */
    memberIds?: string[];
    /** Project sort order */
    sortOrder?: number;
    /** Project icon */
    icon?: string;
    /** Project color */
    color?: string;
  }, options?: CallOptions): Promise<linear.LinearCreateProjectResult>;
  /** Update an existing project in Linear */
  linearUpdateProject(input: {
    /** ID of the project to update */
    id: string;
    /** New name of the project */
    name?: string;
    /** New short summary of the project */
    description?: string;
    /** New content of the project (Markdown supported) */
    content?: string;
    /** New project status by lifecycle type/name (e.g., 'planned', 'started') or project status UUID */
    state?: string;
    /** New project start date */
    startDate?: string;
    /** New project target date */
    targetDate?: string;
    /** New project lead user ID */
    leadId?: string;
    /** Replacement list of project member user IDs */
    memberIds?: string[];
    /** New project sort order */
    sortOrder?: number;
    /** New project icon */
    icon?: string;
    /** New project color */
    color?: string;
  }, options?: CallOptions): Promise<linear.LinearUpdateProjectResult>;
  /** Create a new project update for a Linear project */
  linearCreateProjectUpdate(input: {
    /** ID of the project to create the update for */
    projectId: string;
    /** Body content of the project update */
    body: string;
    /** Optional health status for the update */
    health?: "onTrack" | "atRisk" | "offTrack";
    /** Whether Linear should hide the diff against the previous project update */
    isDiffHidden?: boolean;
  }, options?: CallOptions): Promise<linear.LinearCreateProjectUpdateResult>;
  /** Update an existing project update in Linear */
  linearUpdateProjectUpdate(input: {
    /** ID of the project update to update */
    id: string;
    /** Updated body content of the project update */
    body?: string;
    /** Updated health status for the project update */
    health?: "onTrack" | "atRisk" | "offTrack";
    /** Whether Linear should hide the diff against the previous project update */
    isDiffHidden?: boolean;
  }, options?: CallOptions): Promise<linear.LinearUpdateProjectUpdateResult>;
  /** Get a specific Linear project update by ID */
  linearGetProjectUpdateById(input: {
    /** ID of the project update to retrieve */
    id: string;
  }, options?: CallOptions): Promise<linear.LinearGetProjectUpdateByIdResult>;
  /** Get all updates associated with a project */
  linearGetProjectUpdates(input: {
    /** ID of the project to get updates for */
    projectId: string;
    /** Maximum number of project updates to return (default: 25) */
    limit?: number;
  }, options?: CallOptions): Promise<linear.LinearGetProjectUpdatesResult>;
};
declare namespace linear {
  interface LinearGetOrganizationResult {
    id?: string;
    name?: string;
    urlKey?: string;
    logoUrl?: string;
  }
}
// 173 more tools of linear left out to stay within 2500 tokens: find them with search (namespace "linear") and describe them by address.
// Left out to stay within 2500 tokens: linear.LinearGetViewerResult, linear.LinearGetUsersResult, linear.LinearGetLabelsResult, linear.LinearGetTeamsResult, linear.LinearGetWorkflowStatesResult, linear.LinearCreateWorkflowStateResult, linear.LinearUpdateWorkflowStateResult, linear.LinearUpdateTeamResult, linear.LinearGetTeamMembershipsResult, linear.LinearCreateTeamResult, linear.LinearArchiveTeamResult, linear.LinearAddUserToTeamResult and 12 more. Describe these types by name to see them.
