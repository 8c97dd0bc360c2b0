// search: notion.apiPatchBlockChildren(input: { block_id: string; children: (BlockObjectRequest | string | Record<string, unknown>)[]; after?: string }): Promise<unknown>
interface CallOptions { connection?: string }
declare const notion: {
  /**
   * Notion | Append block children
   * Error Responses:
   * 400: Bad request
   */
  apiPatchBlockChildren(input: {
    /** Identifier for a [block](ref:block). Also accepts a [page](ref:page) ID. */
    block_id: string;
    /** Child content to append to a container block as an array of [block objects](ref:block) */
    children: (notion.BlockObjectRequest | string | Record<string, unknown>)[];
    /** The ID of the existing block that the new block should be appended after. */
    after?: string;
  }, options?: CallOptions): Promise<unknown>;
};
declare namespace notion {
  type BlockObjectRequest = notion.ParagraphBlockRequest | notion.BulletedListItemBlockRequest;
  interface ParagraphBlockRequest {
    paragraph?: {
      rich_text: notion.RichTextRequest[];
    };
    type?: "paragraph";
  }
  interface BulletedListItemBlockRequest {
    bulleted_list_item?: {
      rich_text: notion.RichTextRequest[];
    };
    type?: "bulleted_list_item";
  }
  interface RichTextRequest {
    text: {
      content: string;
      link?: Record<string, unknown> | null;
    };
    type?: "text";
  }
}
