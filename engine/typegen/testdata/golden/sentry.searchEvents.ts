// search: sentry.searchEvents(input: { organizationSlug: string; dataset?: string; query?: string; fields?: string[] | null; sort?: string | null; projectSlug?: string | null; /* 5 more optional */ }): Promise<unknown>
interface CallOptions { connection?: string }
declare const sentry: {
  /**
   * Search Sentry events and replays. Use for event counts/statistics.
   *
   * `query` can be natural language or Sentry search syntax. With an agent configured, it fixes dataset, query, fields, and sort before running.
   *
   * Supports TWO query types:
   * 1. AGGREGATIONS (counts, sums, averages): 'how many errors', 'total tokens'
   * 2. Individual events with timestamps: 'error logs from last hour'
   *
   * Datasets:
   * - errors: Exception/crash events with stack traces, usually grouped into issues
   * - logs: Application log entries, including error-severity log messages
   * - spans: Raw trace/span events for performance, AI/LLM calls, requests, and operations
   * - metrics: Metric rows and aggregates: counters, gauges, distributions, values
   * - profiles: Transaction/continuous profile results, profile IDs, profiled transactions
   * - replays: Session replay results: rage clicks, dead clicks, visited pages, replay users
   * If the user says logs, log messages, error logs, or warning logs, choose logs instead of errors.
   *
   * Replay searches return replay lists only; replay count()/avg()/sum() are not supported.
   *
   * NOT for grouped issue lists (use search_issues) or app screenshots/images (use get_latest_base_snapshot).
   *
   * <examples>
   * search_events(organizationSlug='my-org', query='how many errors today')
   * search_events(organizationSlug='my-org', dataset='errors', query='level:error')
   * search_events(organizationSlug='my-org', dataset='errors', fields=['issue', 'count()'], sort='-count()')
   * search_events(organizationSlug='my-org', dataset='spans', query='span.op:db', sort='-span.duration')
   * search_events(organizationSlug='my-org', dataset='replays', query='count_errors:>0', sort='-count_errors')
   * </examples>
   *
   * <hints>
   * - If the user passes a parameter in the form of name/otherName, it's likely in the format of <organizationSlug>/<projectSlug>.
   * - Parse org/project notation directly without calling find_organizations or find_projects.
   * - Use fields with aggregate functions like count(), avg(), sum() for statistics
   * - Sort by -count() for most common, -timestamp for newest
   * </hints>
   */
  searchEvents(input: {
    /** The organization's slug. You can find a existing list of organizations you have access to using the `find_organizations()` tool. */
    organizationSlug: string;
    /** Initial dataset hint: errors, logs, spans, metrics, profiles, or replays. The agent may correct this when configured. */
    dataset?: "spans" | "errors" | "logs" | "metrics" | "profiles" | "replays";
    /** Natural language or Sentry event search query syntax. */
    query?: string;
    /** Fields to return for event datasets. If not specified, uses sensible defaults. Include aggregate functions like count(), avg() for statistics. Leave null for dataset='replays'. */
    fields?: string[] | null;
    /** Sort field (prefix with - for descending). If omitted, event datasets default to -timestamp and replays default to -started_at. Use -count() for event aggregations. For dataset='replays', use replay sorts like -started_at or -count_errors. */
    sort?: string | null;
    /**
     * The project's slug. You can find a list of existing projects in an organization using the `find_projects()` tool.
     * @default null
     */
    projectSlug?: string | null;
    /** Optional environment filter for dataset='replays'. Use a string for one environment or an array for multiple. For other datasets, filter environment in the query string instead. */
    environment?: string | string[] | null;
    /** Initial time period hint: 1h, 24h, 7d, 14d, 30d, etc. */
    statsPeriod?: string;
    /**
     * The region URL for the organization you're querying, if known. For Sentry's Cloud Service (sentry.io), this is typically the region-specific URL like 'https://us.sentry.io'. For self-hosted Sentry installations, this parameter is usually not needed and should be omitted. You can find the correct regionUrl from the organization details using the `find_organizations()` tool.
     * @default null
     */
    regionUrl?: string | null;
    /**
     * Maximum number of results to return (1-100)
     * @default 10
     * @minimum 1
     * @maximum 100
     */
    limit?: number;
    /**
     * Include explanation of how the query was translated or repaired
     * @default false
     */
    includeExplanation?: boolean;
  }, options?: CallOptions): Promise<unknown>;
};
