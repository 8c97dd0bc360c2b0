// search: github.pushFiles(input: { branch: string; files: { content: string; path: string }[]; message: string; owner: string; repo: string }): Promise<unknown>
interface CallOptions { connection?: string }
declare const github: {
  /** Push multiple files to a GitHub repository in a single commit */
  pushFiles(input: {
    /** Branch to push to */
    branch: string;
    /** Array of file objects to push, each object with path (string) and content (string) */
    files: {
      /** file content */
      content: string;
      /** path to the file */
      path: string;
    }[];
    /** Commit message */
    message: string;
    /** Repository owner */
    owner: string;
    /** Repository name */
    repo: string;
  }, options?: CallOptions): Promise<unknown>;
};
