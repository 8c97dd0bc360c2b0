// search: github.issueWrite(input: { method: "create" | "update"; owner: string; repo: string; assignees?: string[]; body?: string; duplicate_of?: number; issue_number?: number; /* 7 more optional */ }): Promise<unknown>
interface CallOptions { connection?: string }
declare const github: {
  /** Create a new or update an existing issue in a GitHub repository. */
  issueWrite(input: {
    /**
     * Write operation to perform on a single issue.
     * Options are:
     * - 'create' - creates a new issue.
     * - 'update' - updates an existing issue.
     */
    method: "create" | "update";
    /** Repository owner */
    owner: string;
    /** Repository name */
    repo: string;
    /** Usernames to assign to this issue */
    assignees?: string[];
    /** Issue body content */
    body?: string;
    /** Issue number that this issue is a duplicate of. Required when state_reason is 'duplicate'. */
    duplicate_of?: number;
    /** Issue field values to set or clear. Each item requires 'field_name' and exactly one of 'value', 'field_option_name', or 'delete: true'. */
    issue_fields?: {
      /** Issue field name (case-insensitive). Must match a field returned by list_issue_fields for this repository or its organization. */
      field_name: string;
      /** Set to true to clear this field's current value on the issue. When false or omitted, this property is ignored. Cannot be true when 'value' or 'field_option_name' is provided. */
      delete?: boolean;
      /** Option name for single-select fields. Validated against the field's options before the API call. Cannot be combined with 'value' or 'delete: true'. */
      field_option_name?: string;
      /** Value to set. Use for text, number, and date fields (date as YYYY-MM-DD). For single-select fields, prefer 'field_option_name' so the option is validated before the API call. Cannot be combined with 'field_option_name' or 'delete: true'. */
      value?: string | number | boolean;
    }[];
    /** Issue number to update */
    issue_number?: number;
    /** Labels to apply to this issue */
    labels?: string[];
    /** Milestone number */
    milestone?: number;
    /** New state */
    state?: "open" | "closed";
    /** Reason for the state change. Ignored unless state is changed. */
    state_reason?: "completed" | "not_planned" | "duplicate";
    /** Issue title */
    title?: string;
    /** Type of this issue. For updates, pass null to remove the current type. Only use if issue types are enabled for this repository. Use list_issue_types to get valid type values for this repository or its owner organization. If the repository doesn't support issue types, omit this parameter. */
    type?: string | null;
  }, options?: CallOptions): Promise<unknown>;
};
