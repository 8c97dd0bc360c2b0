// search: googlemaps.mapsDirections(input: { origin: string; destination: string; mode?: "driving" | "walking" | "bicycling" | "transit" }): Promise<unknown>
interface CallOptions { connection?: string }
declare const googlemaps: {
  /** Get directions between two points */
  mapsDirections(input: {
    /** Starting point address or coordinates */
    origin: string;
    /** Ending point address or coordinates */
    destination: string;
    /** Travel mode (driving, walking, bicycling, transit) */
    mode?: "driving" | "walking" | "bicycling" | "transit";
  }, options?: CallOptions): Promise<unknown>;
};
