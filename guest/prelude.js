// The guest prelude: evaluated once in every fresh QuickJS runtime before the
// model's code. It captures the host function, removes every engine global
// that reaches outside the run, and installs the sandbox's own globals.
// It evaluates to an object of four functions the driver keeps as values
// (never reachable from the model's code): namespaces, start and deliver.
(function () {
  'use strict';
  const host = globalThis.__cap_host;
  const G = globalThis;
  const O = Object;
  const defineProperty = O.defineProperty;
  const freeze = O.freeze;
  const getPrototypeOf = O.getPrototypeOf;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const RealPromise = Promise;
  const promiseThen = Promise.prototype.then;
  const RealDate = Date;
  const RealError = Error;
  const RealTypeError = TypeError;
  const RealRangeError = RangeError;
  const RealMap = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const mapHas = Map.prototype.has;
  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const StringCtor = String;
  const fromCharCode = String.fromCharCode;
  const MathFloor = Math.floor;

  // ---- engine globals that reach outside the run -------------------------
  for (const name of ['__cap_host', 'std', 'os', 'bjson', 'gc', 'navigator', 'scriptArgs', 'print',
    'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'QJS_PROXY_VALUE', 'performance',
    'WeakRef', 'FinalizationRegistry', 'SharedArrayBuffer', 'Atomics', 'console']) {
    delete G[name];
  }

  // QuickJS-ng implements V8's Error.prepareStackTrace, whose call sites hand
  // out the functions on the stack (getFunction), strict or not: this
  // prelude's own functions (deliver, finish) would be reachable.
  defineProperty(RealError, 'prepareStackTrace', { value: undefined, writable: false, configurable: false });

  // ---- eval and every Function constructor throw --------------------------
  function blocked(what) {
    const f = function () {
      throw new EvalError(what + ' is not available in the sandbox: write the code directly instead of building it from strings');
    };
    return f;
  }
  const FunctionCtor = Function;
  const AsyncFunctionCtor = getPrototypeOf(async function () {}).constructor;
  const GeneratorFunctionCtor = getPrototypeOf(function* () {}).constructor;
  const AsyncGeneratorFunctionCtor = getPrototypeOf(async function* () {}).constructor;
  for (const [ctor, name] of [[FunctionCtor, 'Function'], [AsyncFunctionCtor, 'AsyncFunction'],
    [GeneratorFunctionCtor, 'GeneratorFunction'], [AsyncGeneratorFunctionCtor, 'AsyncGeneratorFunction']]) {
    const b = blocked(name);
    b.prototype = ctor.prototype;
    defineProperty(ctor.prototype, 'constructor', { value: b, writable: false, configurable: false });
    freeze(b);
  }
  defineProperty(G, 'Function', { value: FunctionCtor.prototype.constructor, writable: false, configurable: false });
  defineProperty(G, 'eval', { value: freeze(blocked('eval')), writable: false, configurable: false });

  // ---- per-run state, filled by start ---------------------------------------
  let clockStart = 0;   // epoch ms of the run's logical clock
  let elapsed = 0;      // logical ms since clockStart (advances only when a timer fires)
  let logBudget = 0;
  let logUsed = 0;
  const pending = new RealMap(); // seq -> [resolve, reject, address]
  const timers = new RealMap();  // id -> [fn, args]
  let timerSeq = 0;

  // ---- seeded randomness (sfc32) --------------------------------------------
  let ra = 0, rb = 0, rc = 0, rd = 0;
  function nextU32() {
    ra >>>= 0; rb >>>= 0; rc >>>= 0; rd >>>= 0;
    let t = (ra + rb) | 0;
    ra = rb ^ (rb >>> 9);
    rb = (rc + (rc << 3)) | 0;
    rc = (rc << 21) | (rc >>> 11);
    rd = (rd + 1) | 0;
    t = (t + rd) | 0;
    rc = (rc + t) | 0;
    return t >>> 0;
  }
  function random() {
    return (nextU32() * 2097152 + (nextU32() >>> 11)) / 9007199254740992;
  }
  defineProperty(Math, 'random', { value: random, writable: false, configurable: false });

  function hex2(n) { return (n < 16 ? '0' : '') + n.toString(16); }
  const crypto = freeze({
    randomUUID() {
      const b = [];
      for (let i = 0; i < 16; i++) b.push(nextU32() & 255);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      let s = '';
      for (let i = 0; i < 16; i++) {
        if (i === 4 || i === 6 || i === 8 || i === 10) s += '-';
        s += hex2(b[i]);
      }
      return s;
    },
    getRandomValues(arr) {
      if (!ArrayBuffer.isView(arr) || arr instanceof Float32Array || arr instanceof Float64Array || arr instanceof DataView) {
        throw new RealTypeError('crypto.getRandomValues expects an integer typed array');
      }
      if (arr.byteLength > 65536) {
        throw new RealRangeError('crypto.getRandomValues: ' + arr.byteLength + ' bytes requested, at most 65536 allowed');
      }
      const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = nextU32() & 255;
      return arr;
    },
  });
  defineProperty(G, 'crypto', { value: crypto, writable: false, configurable: false });

  // ---- Date on the run's logical clock -------------------------------------
  function now() { return clockStart + elapsed; }
  function SandboxDate(...args) {
    if (new.target === undefined) return new RealDate(now()).toString();
    return construct(RealDate, args.length === 0 ? [now()] : args, new.target);
  }
  SandboxDate.prototype = RealDate.prototype;
  SandboxDate.now = function () { return now(); };
  SandboxDate.parse = RealDate.parse;
  SandboxDate.UTC = RealDate.UTC;
  defineProperty(RealDate.prototype, 'constructor', { value: SandboxDate, writable: false, configurable: false });
  defineProperty(G, 'Date', { value: freeze(SandboxDate), writable: false, configurable: false });
  defineProperty(G, 'performance', { value: freeze({ now() { return elapsed; }, timeOrigin: 0 }), writable: false, configurable: false });

  // ---- console, within the log budget ---------------------------------------
  function inspect(v, seen) {
    if (typeof v === 'string') return stringify(v);
    if (v === undefined) return 'undefined';
    if (typeof v === 'function') return '[Function ' + (v.name || 'anonymous') + ']';
    if (typeof v === 'bigint') return StringCtor(v) + 'n';
    if (typeof v === 'symbol') return v.toString();
    if (v === null || typeof v !== 'object') return StringCtor(v);
    if (v instanceof RealError) return v.name + ': ' + v.message;
    if (seen.indexOf(v) >= 0) return '[Circular]';
    seen.push(v);
    let out;
    if (Array.isArray(v)) {
      out = '[' + v.map((x) => inspect(x, seen)).join(', ') + ']';
    } else if (v instanceof RealMap) {
      const parts = [];
      v.forEach((val, key) => parts.push(inspect(key, seen) + ' => ' + inspect(val, seen)));
      out = 'Map(' + v.size + ') {' + parts.join(', ') + '}';
    } else if (typeof v.toISOString === 'function' && v instanceof RealDate) {
      out = isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
    } else {
      const parts = [];
      for (const k of O.keys(v)) parts.push(stringify(k) + ': ' + inspect(v[k], seen));
      out = '{' + parts.join(', ') + '}';
    }
    seen.pop();
    return out;
  }
  function logLine(level, args) {
    if (logUsed >= logBudget) return;
    let line = '';
    for (let i = 0; i < args.length; i++) {
      if (i > 0) line += ' ';
      line += typeof args[i] === 'string' ? args[i] : inspect(args[i], []);
      if (line.length > logBudget) break;
    }
    if (level !== 'log') line = '[' + level + '] ' + line;
    if (line.length > logBudget - logUsed + 1) line = line.slice(0, logBudget - logUsed + 1);
    logUsed += line.length + 1;
    host('log', line);
  }
  const console = {};
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    console[level] = function (...args) { logLine(level === 'info' ? 'log' : level, args); };
  }
  defineProperty(G, 'console', { value: freeze(console), writable: false, configurable: false });

  // ---- timers on the logical clock -----------------------------------------
  function setTimeout(fn, delay, ...args) {
    if (typeof fn !== 'function') throw new RealTypeError('setTimeout expects a function as its first argument');
    let ms = Number(delay);
    if (!(ms > 0)) ms = 0;
    if (ms > 30000) {
      throw new RealRangeError('setTimeout delay of ' + ms + ' ms exceeds the sandbox limit of 30000 ms; wait in shorter steps or drop the wait');
    }
    ms = MathFloor(ms);
    const id = ++timerSeq;
    apply(mapSet, timers, [id, [fn, args]]);
    host('timer', id + ':' + (elapsed + ms));
    return id;
  }
  function clearTimeout(id) {
    if (apply(mapDelete, timers, [id])) host('cleartimer', StringCtor(id));
  }
  defineProperty(G, 'setTimeout', { value: freeze(setTimeout), writable: false, configurable: false });
  defineProperty(G, 'clearTimeout', { value: freeze(clearTimeout), writable: false, configurable: false });

  // ---- ToolError and the tool bridge ----------------------------------------
  class ToolError extends RealError {
    constructor(message, fields) {
      super(message);
      const f = fields || {};
      this.name = 'ToolError';
      this.code = f.code || 'tool_error';
      this.address = f.address || '';
      this.status = f.status || 0;
      this.hint = f.hint || '';
      this.retryable = !!f.retryable;
    }
  }
  freeze(ToolError.prototype);
  defineProperty(G, 'ToolError', { value: freeze(ToolError), writable: false, configurable: false });

  function call(address, args, opts) {
    let connection = '';
    if (opts !== undefined && opts !== null) {
      if (typeof opts !== 'object') throw new RealTypeError(address + ': the second argument must be an options object like { connection: "work" }');
      if (opts.connection !== undefined) {
        if (typeof opts.connection !== 'string') throw new RealTypeError(address + ': options.connection must be a string like "work"');
        connection = opts.connection;
      }
    }
    if (args === undefined) args = {};
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      throw new RealTypeError(address + ' expects one object argument with the tool\'s parameters, got ' + (Array.isArray(args) ? 'an array' : args === null ? 'null' : typeof args));
    }
    let argsJSON;
    try {
      argsJSON = stringify(args);
    } catch (e) {
      throw new RealTypeError(address + ': the arguments are not JSON-serializable: ' + e.message);
    }
    if (typeof argsJSON !== 'string' || argsJSON[0] !== '{') {
      throw new RealTypeError(address + ': the arguments must serialize to a JSON object');
    }
    // Built by hand so that no toJSON on a prototype can change the address.
    const payload = '{"address":' + stringify(StringCtor(address)) + ',"connection":' + stringify(StringCtor(connection)) + ',"args":' + argsJSON + '}';
    return new RealPromise((resolve, reject) => {
      const seq = host('call', payload);
      apply(mapSet, pending, [seq, [resolve, reject, address]]);
    });
  }

  function levenshtein(a, b) {
    const m = a.length, n = b.length;
    let prev = [];
    for (let j = 0; j <= n; j++) prev[j] = j;
    for (let i = 1; i <= m; i++) {
      const cur = [i];
      for (let j = 1; j <= n; j++) {
        const cost = a[i - 1] === b[j - 1] ? 0 : 1;
        cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      }
      prev = cur;
    }
    return prev[n];
  }
  function closest(name, names) {
    const lower = name.toLowerCase();
    const scored = names.map((t) => {
      const tl = t.toLowerCase();
      let d = levenshtein(lower, tl);
      if (tl.indexOf(lower) >= 0 || lower.indexOf(tl) >= 0) d = Math.min(d, 1);
      return [d, t];
    });
    scored.sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : 1));
    return scored.slice(0, 3).map((s) => s[1]);
  }
  const passThrough = ['then', 'toJSON', 'constructor', 'valueOf', 'toString', 'inspect', 'prototype', '__proto__'];
  // A namespace's global is a proxy over a target no code can reach. Its
  // tools are read from the host the first time any trap runs (any use of
  // the namespace); then the target is filled and frozen, and every trap
  // forwards to it, so the namespace behaves as the frozen object of its
  // tools from the first touch on. Materializing runs in the middle of the
  // model's code, so it uses only what this prelude captured. Each proxy's
  // handler holds its namespace's state; the traps are its prototype, which
  // has no prototype: a trap the model adds to Object.prototype is never
  // looked up (it would be handed the target before it is filled).
  const RealProxy = Proxy;
  const reflectOwnKeys = Reflect.ownKeys;
  const reflectGetOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
  const reflectDefineProperty = Reflect.defineProperty;
  const reflectDeleteProperty = Reflect.deleteProperty;
  const reflectSet = Reflect.set;
  const reflectIsExtensible = Reflect.isExtensible;
  const reflectPreventExtensions = Reflect.preventExtensions;
  const reflectSetPrototypeOf = Reflect.setPrototypeOf;
  const reflectGetPrototypeOf = Reflect.getPrototypeOf;
  const hasOwn = O.prototype.hasOwnProperty;
  function materialize(h, t) {
    if (h.tools !== null) return h.tools;
    const ns = h.ns;
    const tools = parse(host('tools', ns));
    for (let i = 0; i < tools.length; i++) {
      const address = ns + '.' + tools[i];
      t[tools[i]] = async function (args, opts) { return call(address, args, opts); };
    }
    freeze(t);
    h.tools = tools;
    return tools;
  }
  const namespaceTraps = freeze(O.setPrototypeOf({
    get(t, prop) {
      const tools = materialize(this, t);
      if (typeof prop !== 'string' || prop in t || passThrough.indexOf(prop) >= 0) return t[prop];
      const ns = this.ns;
      const near = closest(prop, tools);
      throw new RealTypeError(ns + '.' + prop + ' is not a tool of ' + ns + (near.length ? '; closest: ' + near.map((n) => ns + '.' + n).join(', ') : '; this namespace has no tools') + '. Use hub.search(query) to find tools.');
    },
    has(t, prop) { materialize(this, t); return prop in t; },
    ownKeys(t) { materialize(this, t); return reflectOwnKeys(t); },
    getOwnPropertyDescriptor(t, prop) { materialize(this, t); return reflectGetOwnPropertyDescriptor(t, prop); },
    defineProperty(t, prop, desc) { materialize(this, t); return reflectDefineProperty(t, prop, desc); },
    deleteProperty(t, prop) { materialize(this, t); return reflectDeleteProperty(t, prop); },
    set(t, prop, value, receiver) { materialize(this, t); return reflectSet(t, prop, value, receiver); },
    isExtensible(t) { materialize(this, t); return reflectIsExtensible(t); },
    preventExtensions(t) { materialize(this, t); return reflectPreventExtensions(t); },
    getPrototypeOf(t) { materialize(this, t); return reflectGetPrototypeOf(t); },
    setPrototypeOf(t, proto) { materialize(this, t); return reflectSetPrototypeOf(t, proto); },
  }, null));
  function defineNamespace(ns) {
    if (apply(hasOwn, G, [ns])) return;
    defineProperty(G, ns, { value: new RealProxy(O.create(null), { __proto__: namespaceTraps, ns: ns, tools: null }), writable: false, enumerable: true, configurable: false });
  }

  const hub = freeze({
    search(query) { return call('hub.search', { query: StringCtor(query) }); },
    describe(target) { return call('hub.describe', { target: StringCtor(target) }); },
    // A large tool result arrives as {handle, size, type, preview}; read
    // parts of it: {offset, length} (bytes) or {jsonPath: "$.items[0].id"}.
    read(handle, opts) {
      const id = handle !== null && typeof handle === 'object' ? handle.handle : handle;
      const a = { handle: StringCtor(id) };
      if (opts !== undefined && opts !== null) {
        if (typeof opts !== 'object') throw new RealTypeError('hub.read: the second argument must be {offset, length} or {jsonPath}');
        if (opts.offset !== undefined) a.offset = opts.offset;
        if (opts.length !== undefined) a.length = opts.length;
        if (opts.jsonPath !== undefined) a.jsonPath = StringCtor(opts.jsonPath);
      }
      return call('hub.read', a);
    },
  });
  defineProperty(G, 'hub', { value: hub, writable: false, configurable: false });

  // ---- structuredClone, TextEncoder/TextDecoder, atob/btoa ------------------
  function cloneValue(v, seen) {
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return v;
    if (typeof v === 'function') throw new DOMException('function could not be cloned', 'DataCloneError');
    if (apply(mapHas, seen, [v])) return apply(mapGet, seen, [v]);
    let out;
    if (v instanceof RealDate) out = new RealDate(v.getTime());
    else if (v instanceof RegExp) out = new RegExp(v.source, v.flags);
    else if (v instanceof ArrayBuffer) out = v.slice(0);
    else if (ArrayBuffer.isView(v)) {
      const C = v.constructor;
      out = v instanceof DataView ? new DataView(v.buffer.slice(0), v.byteOffset, v.byteLength) : new C(v);
    } else if (v instanceof RealMap) {
      out = new RealMap();
      apply(mapSet, seen, [v, out]);
      v.forEach((val, key) => out.set(cloneValue(key, seen), cloneValue(val, seen)));
      return out;
    } else if (v instanceof Set) {
      out = new Set();
      apply(mapSet, seen, [v, out]);
      v.forEach((val) => out.add(cloneValue(val, seen)));
      return out;
    } else if (v instanceof RealError) {
      out = new RealError(v.message);
      out.name = v.name;
    } else if (Array.isArray(v)) {
      out = [];
      apply(mapSet, seen, [v, out]);
      for (let i = 0; i < v.length; i++) out[i] = cloneValue(v[i], seen);
      return out;
    } else {
      out = {};
      apply(mapSet, seen, [v, out]);
      for (const k of O.keys(v)) out[k] = cloneValue(v[k], seen);
      return out;
    }
    apply(mapSet, seen, [v, out]);
    return out;
  }
  function structuredClone(v) { return cloneValue(v, new RealMap()); }

  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input) {
      const s = input === undefined ? '' : StringCtor(input);
      const out = [];
      for (let i = 0; i < s.length; i++) {
        let c = s.charCodeAt(i);
        if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
          const d = s.charCodeAt(i + 1);
          if (d >= 0xdc00 && d <= 0xdfff) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; } else c = 0xfffd;
        } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
        if (c < 0x80) out.push(c);
        else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
        else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
        else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      }
      return new Uint8Array(out);
    }
  }
  class TextDecoder {
    constructor(label) {
      const l = label === undefined ? 'utf-8' : StringCtor(label).toLowerCase();
      if (l !== 'utf-8' && l !== 'utf8') throw new RealRangeError('TextDecoder supports only utf-8, got ' + l);
    }
    get encoding() { return 'utf-8'; }
    decode(input) {
      if (input === undefined) return '';
      const b = input instanceof ArrayBuffer ? new Uint8Array(input) : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
      let s = '';
      for (let i = 0; i < b.length;) {
        const c = b[i];
        let cp = 0xfffd, n = 1;
        if (c < 0x80) cp = c;
        else if (c >= 0xc2 && c < 0xe0 && i + 1 < b.length && (b[i + 1] & 0xc0) === 0x80) { cp = ((c & 31) << 6) | (b[i + 1] & 63); n = 2; }
        else if (c >= 0xe0 && c < 0xf0 && i + 2 < b.length && (b[i + 1] & 0xc0) === 0x80 && (b[i + 2] & 0xc0) === 0x80) {
          cp = ((c & 15) << 12) | ((b[i + 1] & 63) << 6) | (b[i + 2] & 63); n = 3;
          if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) cp = 0xfffd;
        } else if (c >= 0xf0 && c < 0xf5 && i + 3 < b.length && (b[i + 1] & 0xc0) === 0x80 && (b[i + 2] & 0xc0) === 0x80 && (b[i + 3] & 0xc0) === 0x80) {
          cp = ((c & 7) << 18) | ((b[i + 1] & 63) << 12) | ((b[i + 2] & 63) << 6) | (b[i + 3] & 63); n = 4;
          if (cp < 0x10000 || cp > 0x10ffff) cp = 0xfffd;
        }
        s += StringCtor.fromCodePoint(cp);
        i += n;
      }
      return s;
    }
  }
  const b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  function btoa(input) {
    const s = StringCtor(input);
    let out = '';
    for (let i = 0; i < s.length; i += 3) {
      const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
      if (a > 255 || b > 255 || c > 255) throw new DOMException('btoa: the string contains characters outside of Latin1', 'InvalidCharacterError');
      const n = (a << 16) | ((b || 0) << 8) | (c || 0);
      out += b64[n >> 18] + b64[(n >> 12) & 63] + (i + 1 < s.length ? b64[(n >> 6) & 63] : '=') + (i + 2 < s.length ? b64[n & 63] : '=');
    }
    return out;
  }
  function atob(input) {
    let s = StringCtor(input).replace(/[\t\n\f\r ]/g, '');
    if (s.length % 4 === 0) s = s.replace(/==?$/, '');
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw new DOMException('atob: the string is not valid base64', 'InvalidCharacterError');
    let out = '', buf = 0, bits = 0;
    for (let i = 0; i < s.length; i++) {
      buf = (buf << 6) | b64.indexOf(s[i]);
      bits += 6;
      if (bits >= 8) { bits -= 8; out += fromCharCode((buf >> bits) & 255); }
    }
    return out;
  }
  for (const [name, value] of [['structuredClone', structuredClone], ['TextEncoder', TextEncoder], ['TextDecoder', TextDecoder], ['atob', atob], ['btoa', btoa]]) {
    defineProperty(G, name, { value: freeze(value), writable: false, configurable: false });
  }

  // ---- the driver's entry points ----------------------------------------------
  function errorInfo(e) {
    if (e instanceof ToolError) {
      return { name: 'ToolError', message: StringCtor(e.message), code: e.code, address: e.address, status: e.status, hint: e.hint, retryable: e.retryable, stack: StringCtor(e.stack || '') };
    }
    if (e instanceof RealError) {
      return { name: StringCtor(e.name), message: StringCtor(e.message), stack: StringCtor(e.stack || '') };
    }
    let text;
    try { text = typeof e === 'string' ? e : inspect(e, []); } catch (x) { text = 'a non-Error value'; }
    return { name: 'Thrown', message: text, stack: '' };
  }
  function finish(ok, v) {
    if (!ok) { host('fail', stringify(errorInfo(v))); return; }
    let json;
    try {
      json = stringify(v);
    } catch (e) {
      host('fail', stringify({ name: 'TypeError', message: 'the returned value is not JSON-serializable: ' + e.message, stack: '' }));
      return;
    }
    host('done', json === undefined ? 'null' : json);
  }

  return {
    // namespaces installs a JSON array of namespace names, once, before
    // start (a runtime kept ready has its namespaces installed already). A
    // namespace whose name is already a global (hub, console, Math…) is
    // skipped. Only names: each namespace's tools are read on first use.
    namespaces(namesJSON) {
      const names = parse(namesJSON);
      for (let i = 0; i < names.length; i++) defineNamespace(names[i]);
    },
    // start sets the run's logical clock, seed and log budget (a JSON
    // object), then starts the model's function.
    start(configJSON, fn) {
      const c = parse(configJSON);
      clockStart = c.clock;
      logBudget = c.logBudget;
      ra = c.seed[0]; rb = c.seed[1]; rc = c.seed[2]; rd = c.seed[3];
      for (let i = 0; i < 12; i++) nextU32();
      let p;
      try { p = fn(); } catch (e) { finish(false, e); return; }
      apply(promiseThen, p, [(v) => finish(true, v), (e) => finish(false, e)]);
    },
    // deliver takes one message from the host: {"timer": id, "due": ms} when
    // a timer is due, {"id": seq, "r": {ok, value | error}} when a call settled.
    deliver(message) {
      const m = parse(message);
      if (m.timer !== undefined) {
        const t = apply(mapGet, timers, [m.timer]);
        if (!t) return;
        apply(mapDelete, timers, [m.timer]);
        if (m.due > elapsed) elapsed = m.due;
        try { apply(t[0], undefined, t[1]); } catch (e) { finish(false, e); }
        return;
      }
      const p = apply(mapGet, pending, [m.id]);
      if (!p) return;
      apply(mapDelete, pending, [m.id]);
      const r = m.r;
      if (r.ok) {
        p[0](r.value);
        return;
      }
      const e = r.error || {};
      p[1](new ToolError(e.message || 'tool call failed', { code: e.code, address: p[2], status: e.status, hint: e.hint, retryable: e.retryable }));
    },
  };
})()
