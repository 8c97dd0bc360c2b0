// search: linear.linearGetWorkflowStates(input: { teamId: string; includeArchived?: boolean }): Promise<LinearGetWorkflowStatesResult>
interface CallOptions { connection?: string }
declare const linear: {
  /** Get workflow states for a team */
  linearGetWorkflowStates(input: {
    /** ID of the team to get workflow states for */
    teamId: string;
    /** Whether to include archived states (default: false) */
    includeArchived?: boolean;
  }, options?: CallOptions): Promise<linear.LinearGetWorkflowStatesResult>;
};
declare namespace linear {
  interface LinearGetWorkflowStatesResult {
    items: {
      id?: string;
      name?: string;
      type?: string;
      position?: number;
      color?: string | null;
      description?: string | null;
    }[];
  }
}
