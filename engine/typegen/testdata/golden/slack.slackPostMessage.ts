// search: slack.slackPostMessage(input: { channel_id: string; text: string }): Promise<unknown>
interface CallOptions { connection?: string }
declare const slack: {
  /** Post a new message to a Slack channel */
  slackPostMessage(input: {
    /** The ID of the channel to post to */
    channel_id: string;
    /** The message text to post */
    text: string;
  }, options?: CallOptions): Promise<unknown>;
};
