// search: memory.createEntities(input: { entities: CreateEntitiesEntitiesItem[] }): Promise<CreateEntitiesResult>
interface CallOptions { connection?: string }
declare const memory: {
  /** Create multiple new entities in the knowledge graph */
  createEntities(input: {
    entities: {
      /** The name of the entity */
      name: string;
      /** The type of the entity */
      entityType: string;
      /** An array of observation contents associated with the entity */
      observations: string[];
    }[];
  }, options?: CallOptions): Promise<memory.CreateEntitiesResult>;
};
declare namespace memory {
  interface CreateEntitiesResult {
    entities: {
      /** The name of the entity */
      name: string;
      /** The type of the entity */
      entityType: string;
      /** An array of observation contents associated with the entity */
      observations: string[];
    }[];
  }
}
