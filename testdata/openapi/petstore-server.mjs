// A small Petstore-like HTTP API that serves its own OpenAPI 3.0 document
// at /openapi.json (and YAML at /openapi.yaml), for the hub's OpenAPI tests.
// It listens on 127.0.0.1 at $PORT (0: any free port) and prints
// "listening <port>" on stdout. Writes need the API key "test-key" in
// X-API-Key. /api/echo answers with the request as it arrived.
// REDIRECT_TO names the origin /api/moved redirects to.
import http from "node:http";

const pets = new Map([
  [1, { id: 1, name: "Rex", tag: "dog" }],
  [2, { id: 2, name: "Tom", tag: "cat" }],
]);
let nextId = 3;

const pet = { $ref: "#/components/schemas/Pet" };
const doc = {
  openapi: "3.0.3",
  info: { title: "Petstore", version: "1.0.0", description: "Pets for the hub's tests." },
  servers: [{ url: "/api" }],
  components: {
    securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "X-API-Key" } },
    schemas: {
      Pet: {
        type: "object",
        required: ["id", "name"],
        properties: { id: { type: "integer", format: "int64" }, name: { type: "string" }, tag: { type: "string", nullable: true } },
      },
      NewPet: { type: "object", required: ["name"], properties: { name: { type: "string" }, tag: { type: "string" } } },
      Error: { type: "object", properties: { code: { type: "integer" }, message: { type: "string" } } },
    },
    parameters: { PetId: { name: "petId", in: "path", required: true, schema: { type: "integer" } } },
  },
  security: [{ apiKey: [] }],
  paths: {
    "/pets": {
      get: {
        operationId: "listPets",
        summary: "List all pets",
        security: [],
        parameters: [
          { name: "limit", in: "query", schema: { type: "integer", maximum: 100 } },
          { name: "tags", in: "query", style: "form", explode: true, schema: { type: "array", items: { type: "string" } } },
        ],
        responses: {
          200: { description: "A list of pets", content: { "application/json": { schema: { type: "array", items: pet } } } },
          default: { description: "error", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
        },
      },
      post: {
        operationId: "createPet",
        summary: "Create a pet",
        requestBody: { required: true, content: { "application/json": { schema: { $ref: "#/components/schemas/NewPet" } } } },
        responses: { 201: { description: "Created", content: { "application/json": { schema: pet } } } },
      },
    },
    "/pets/{petId}": {
      parameters: [{ $ref: "#/components/parameters/PetId" }],
      get: {
        operationId: "showPetById",
        summary: "Info for a specific pet",
        security: [],
        responses: { 200: { description: "The pet", content: { "application/json": { schema: pet } } } },
      },
      put: {
        operationId: "updatePet",
        summary: "Replace a pet",
        requestBody: { required: true, content: { "application/json": { schema: { $ref: "#/components/schemas/NewPet" } } } },
        responses: { 200: { description: "The pet", content: { "application/json": { schema: pet } } } },
      },
      delete: {
        operationId: "deletePet",
        summary: "Delete a pet",
        responses: { 204: { description: "Deleted" } },
      },
    },
    "/echo/{id}": {
      post: {
        operationId: "echo",
        summary: "Answer with the request as it arrived (its headers too: the API key)",
        parameters: [
          { name: "id", in: "path", required: true, schema: { type: "string" } },
          { name: "id", in: "query", schema: { type: "string" } },
          { name: "ids", in: "query", explode: false, schema: { type: "array", items: { type: "integer" } } },
          { name: "filter", in: "query", style: "deepObject", schema: { type: "object", additionalProperties: { type: "string" } } },
          { name: "X-Trace", in: "header", schema: { type: "string" } },
          { name: "session", in: "cookie", schema: { type: "string" } },
        ],
        requestBody: { content: { "application/x-www-form-urlencoded": { schema: { type: "object", properties: { a: { type: "string" }, b: { type: "array", items: { type: "string" } } } } } } },
        responses: { 200: { description: "The request", content: { "application/json": { schema: { type: "object" } } } } },
      },
    },
    "/page": {
      get: { operationId: "page", summary: "An HTML page", security: [], responses: { 200: { description: "HTML", content: { "text/html": {} } } } },
    },
    "/slow": {
      get: { operationId: "slow", summary: "Never answers", security: [], responses: { 200: { description: "never" } } },
    },
    "/moved": {
      get: { operationId: "moved", summary: "Redirects to another origin", security: [], responses: { 200: { description: "never" } } },
    },
  },
};

function toYAML(v, indent = "") {
  // Enough YAML for this document: JSON scalars are valid YAML scalars.
  if (Array.isArray(v)) {
    if (v.length === 0) return " []";
    return v.map((e) => `\n${indent}- ` + toYAML(e, indent + "  ").trimStart()).join("");
  }
  if (v && typeof v === "object") {
    const ks = Object.keys(v);
    if (ks.length === 0) return " {}";
    return ks.map((k) => `\n${indent}${JSON.stringify(k)}:` + toYAML(v[k], indent + "  ")).join("");
  }
  return " " + JSON.stringify(v);
}

function send(res, status, body, type = "application/json") {
  const text = type === "application/json" ? JSON.stringify(body) : body;
  res.writeHead(status, { "Content-Type": type });
  res.end(text);
}

const server = http.createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  let raw = "";
  req.on("data", (c) => (raw += c));
  req.on("end", () => {
    const write = req.method !== "GET" && req.method !== "HEAD";
    if (u.pathname === "/openapi.json") return send(res, 200, doc);
    if (u.pathname === "/openapi.yaml") return send(res, 200, "openapi: 3.0.3" + toYAML(Object.fromEntries(Object.entries(doc).filter(([k]) => k !== "openapi"))) + "\n", "application/yaml");
    if (u.pathname.startsWith("/slow/")) return; // never answers
    if (u.pathname.startsWith("/private/")) return send(res, 401, { code: 401, message: "sign in first" });
    if (u.pathname === "/docs") return send(res, 200, "<!DOCTYPE html><html><body>API docs</body></html>", "text/html");
    if (u.pathname === "/api/echo/" + u.pathname.split("/")[3] && req.method === "POST") {
      return send(res, 200, { method: req.method, path: u.pathname, rawPath: req.url.split("?")[0], query: u.search, headers: req.headers, body: raw });
    }
    if (u.pathname === "/api/page") return send(res, 200, "<html><body>hello</body></html>", "text/html");
    if (u.pathname === "/api/slow") return; // never answers
    if (u.pathname === "/api/moved") {
      res.writeHead(302, { Location: (process.env.REDIRECT_TO || "http://127.0.0.1:9") + "/stolen" });
      return res.end();
    }
    if (write && req.headers["x-api-key"] !== "test-key") return send(res, 401, { code: 401, message: "missing or wrong API key" });
    const m = u.pathname.match(/^\/api\/pets(?:\/([^/]+))?$/);
    if (!m) return send(res, 404, { code: 404, message: "no route " + u.pathname });
    if (!m[1]) {
      if (req.method === "GET") {
        let list = [...pets.values()];
        const tags = u.searchParams.getAll("tags");
        if (tags.length) list = list.filter((p) => tags.includes(p.tag));
        const limit = u.searchParams.get("limit");
        if (limit) list = list.slice(0, Number(limit));
        return send(res, 200, list);
      }
      if (req.method === "POST") {
        let body;
        try { body = JSON.parse(raw); } catch { return send(res, 400, { code: 400, message: "body is not JSON" }); }
        if (typeof body.name !== "string") return send(res, 400, { code: 400, message: "name is required" });
        const p = { id: nextId++, name: body.name, tag: body.tag ?? null };
        pets.set(p.id, p);
        return send(res, 201, p);
      }
      return send(res, 405, { code: 405, message: "method not allowed" });
    }
    const id = Number(m[1]);
    if (!pets.has(id)) return send(res, 404, { code: 404, message: "no pet " + m[1] });
    if (req.method === "GET") return send(res, 200, pets.get(id));
    if (req.method === "PUT") {
      const body = JSON.parse(raw || "{}");
      const p = { id, name: body.name, tag: body.tag ?? null };
      pets.set(id, p);
      return send(res, 200, p);
    }
    if (req.method === "DELETE") {
      pets.delete(id);
      res.writeHead(204);
      return res.end();
    }
    return send(res, 405, { code: 405, message: "method not allowed" });
  });
});

server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
