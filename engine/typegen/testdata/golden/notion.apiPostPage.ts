// search: notion.apiPostPage(input: { parent: ParentRequest | string; properties: Record<string, unknown> | string; children?: (string | Record<string, unknown>)[]; icon?: string; /* 1 more optional */ }): Promise<unknown>
interface CallOptions { connection?: string }
declare const notion: {
  /**
   * Notion | Create a page
   * Error Responses:
   * 400: Bad request
   */
  apiPostPage(input: {
    parent: notion.ParentRequest | string;
    properties: Record<string, unknown> | string;
    /** The content to be rendered on the new page, represented as an array of [block objects](https://developers.notion.com/reference/block). */
    children?: (string | Record<string, unknown>)[];
    /**
     * The icon of the new page. Either an [emoji object](https://developers.notion.com/reference/emoji-object) or an [external file object](https://developers.notion.com/reference/file-object)..
     * @format json
     */
    icon?: string;
    /**
     * The cover image of the new page, represented as a [file object](https://developers.notion.com/reference/file-object).
     * @format json
     */
    cover?: string;
  }, options?: CallOptions): Promise<unknown>;
};
declare namespace notion {
  type ParentRequest = notion.PageIdParentRequest | notion.DataSourceIdParentRequest | {
    type: "workspace";
  };
  interface PageIdParentRequest {
    /** @format uuid */
    page_id: string;
  }
  interface DataSourceIdParentRequest {
    /** @format uuid */
    database_id: string;
    type?: "database_id";
  }
}
