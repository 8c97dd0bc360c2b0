// search: github.getMe(): Promise<unknown>
interface CallOptions { connection?: string }
declare const github: {
  /** Get details of the authenticated GitHub user. Use this when a request is about the user's own profile for GitHub. Or when information is missing to build other tool calls. */
  getMe(input?: Record<string, unknown>, options?: CallOptions): Promise<unknown>;
};
