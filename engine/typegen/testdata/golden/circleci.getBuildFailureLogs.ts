// search: circleci.getBuildFailureLogs(input?: { params?: GetBuildFailureLogsParams }): Promise<unknown>
interface CallOptions { connection?: string }
declare const circleci: {
  /**
   * This tool helps debug CircleCI build failures by retrieving failure logs.
   *
   * CRITICAL REQUIREMENTS:
   * 1. Large Log Handling:
   *    - If you expect large logs or want the full output, provide outputDir. The full logs will be written to a file and the path returned.
   *      * Use the project/workspace root when available, otherwise use the Downloads folder (e.g., "~/Downloads").
   *    - If outputDir is omitted, logs are returned inline but may be truncated. When truncated, output will contain <MCPTruncationWarning> and you MUST acknowledge: "WARNING: The logs have been truncated. Only showing the most recent entries."
   *
   * Input options (EXACTLY ONE of these THREE options must be used):
   *
   * Option 1 - Project Slug and branch (BOTH required):
   * - projectSlug: The project slug obtained from listFollowedProjects tool (e.g., "gh/organization/project")
   * - branch: The name of the branch (required when using projectSlug)
   *
   * Option 2 - Direct URL (provide ONE of these):
   * - projectURL: The URL of the CircleCI project in any of these formats:
   *   * Project URL: https://app.circleci.com/pipelines/gh/organization/project
   *   * Pipeline URL: https://app.circleci.com/pipelines/gh/organization/project/123
   *   * Legacy Job URL: https://circleci.com/pipelines/gh/organization/project/123
   *   * Workflow URL: https://app.circleci.com/pipelines/gh/organization/project/123/workflows/abc-def
   *   * Job URL: https://app.circleci.com/pipelines/gh/organization/project/123/workflows/abc-def/jobs/xyz
   *
   * Option 3 - Project Detection (ALL of these must be provided together):
   * - workspaceRoot: The absolute path to the workspace root
   * - gitRemoteURL: The URL of the git remote repository
   * - branch: The name of the current branch
   *
   * Recommended Workflow:
   * 1. Use listFollowedProjects tool to get a list of projects
   * 2. Extract the projectSlug from the chosen project (format: "gh/organization/project")
   * 3. Use that projectSlug with a branch name for this tool
   *
   * Additional Requirements:
   * - Never call this tool with incomplete parameters
   * - If using Option 1, make sure to extract the projectSlug exactly as provided by listFollowedProjects
   * - If using Option 2, the URLs MUST be provided by the user - do not attempt to construct or guess URLs
   * - If using Option 3, ALL THREE parameters (workspaceRoot, gitRemoteURL, branch) must be provided
   * - If none of the options can be fully satisfied, ask the user for the missing information before making the tool call
   *
   * NOTE: This CircleCI MCP server (@circleci/mcp-server-circleci) is deprecated and no longer receives feature work. Please tell the user to migrate to CircleCI's hosted MCP server or the CircleCI CLI MCP: https://circleci.com/docs/guides/toolkit/circleci-mcp-overview/
   */
  getBuildFailureLogs(input?: {
    params?: {
      /** The project slug from listFollowedProjects tool (e.g., "gh/organization/project"). When using this option, branch must also be provided. */
      projectSlug?: string;
      /** The name of the branch currently checked out in local workspace. This should match local git branch. For example: "feature/my-branch", "bugfix/123", "main", "master" etc. */
      branch?: string;
      /**
       * The URL of the CircleCI project. Can be any of these formats:
       * - Project URL with branch: https://app.circleci.com/pipelines/gh/organization/project?branch=feature-branch
       * - Pipeline URL: https://app.circleci.com/pipelines/gh/organization/project/123
       * - Workflow URL: https://app.circleci.com/pipelines/gh/organization/project/123/workflows/abc-def
       * - Job URL: https://app.circleci.com/pipelines/gh/organization/project/123/workflows/abc-def/jobs/xyz
       */
      projectURL?: string;
      /** The absolute path to the root directory of your project workspace. This should be the top-level folder containing your source code, configuration files, and dependencies. For example: "/home/user/my-project" or "C:\Users\user\my-project" */
      workspaceRoot?: string;
      /** The URL of the remote git repository. This should be the URL of the repository that you cloned to your local workspace. For example: "https://github.com/user/my-project.git" */
      gitRemoteURL?: string;
      /** Optional. When provided, the full build logs are written to a file in this directory and the file path is returned. Use this for large logs to avoid truncation. Use the workspace/project root when available (e.g., "/home/user/my-project"), otherwise use the Downloads folder (e.g., "~/Downloads"). Must be inside the current working directory, the user home directory, or a temp directory. System paths and hidden config directories (e.g. "/etc", "~/.ssh") are rejected. */
      outputDir?: string;
    };
  }, options?: CallOptions): Promise<unknown>;
};
