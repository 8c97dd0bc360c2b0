// search: mongodb.insertMany(input: { connectionId: string; database: string; collection: string; documents: { [key: string]: unknown }[] }): Promise<InsertManyResult>
interface CallOptions { connection?: string }
declare const mongodb: {
  /** Insert an array of documents into a MongoDB collection. If the list of documents is above com.mongodb/maxRequestPayloadBytes, consider inserting them in batches. */
  insertMany(input: {
    /** The connection to run the operation against. Use the id returned by one of the connect tools. */
    connectionId: string;
    /** Database name */
    database: string;
    /** Collection name */
    collection: string;
    /** The array of documents to insert, matching the syntax of the document argument of db.collection.insertMany(). */
    documents: {
      [key: string]: unknown;
    }[];
  }, options?: CallOptions): Promise<mongodb.InsertManyResult>;
};
declare namespace mongodb {
  interface InsertManyResult {
    database: string;
    collection: string;
    insertedCount: number;
    insertedIds: unknown[];
  }
}
