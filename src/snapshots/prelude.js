// The environment user functions run in: a lodash-like `_`, a deterministic
// `Math.random` and `Date`, and the dispatcher the server calls. Evaluated in every fresh
// context, before any user code: what the dispatcher uses is captured here, so a function that
// replaces `JSON.stringify` (say) cannot change how its own result is read.
"use strict";
(() => {
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const freeze = Object.freeze;
  const isArray = Array.isArray;
  const MakeFunction = Function;
  const MakeRegExp = RegExp;
  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const exec = RegExp.prototype.exec;
  const push = Array.prototype.push;
  const isObject = (value) => value !== null && (typeof value === "object" || typeof value === "function");
  const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
  const isIndex = (key) => /^(0|[1-9]\d*)$/.test(String(key));
  const toPath = (path) => {
    if (Array.isArray(path)) return path.map(String);
    const segments = [];
    String(path).replace(/[^.[\]]+|\[(?:(-?\d+(?:\.\d+)?)|(["'])((?:(?!\2)[^\\]|\\.)*?)\2)\]|(?=(?:\.|\[\])(?:\.|\[\]|$))/g,
      (match, number, quote, quoted) => {
        segments.push(quote ? quoted.replace(/\\(\\)?/g, "$1") : (number !== undefined ? number : match));
        return match;
      });
    return segments;
  };
  const get = (object, path, fallback) => {
    let current = object;
    for (const key of toPath(path)) {
      if (current === null || current === undefined) return fallback;
      current = current[key];
    }
    return current === undefined ? fallback : current;
  };
  const has = (object, path) => {
    let current = object;
    for (const key of toPath(path)) {
      if (!isObject(current) || !Object.prototype.hasOwnProperty.call(current, key)) return false;
      current = current[key];
    }
    return true;
  };
  const set = (object, path, value) => {
    if (!isObject(object)) return object;
    const keys = toPath(path);
    let current = object;
    keys.forEach((key, index) => {
      if (index === keys.length - 1) {
        current[key] = value;
      } else {
        if (!isObject(current[key])) current[key] = isIndex(keys[index + 1]) ? [] : {};
        current = current[key];
      }
    });
    return object;
  };
  const unset = (object, path) => {
    const keys = toPath(path);
    const parent = keys.length > 1 ? get(object, keys.slice(0, -1)) : object;
    if (!isObject(parent)) return true;
    const last = keys[keys.length - 1];
    if (Array.isArray(parent) && isIndex(last)) parent.splice(Number(last), 1);
    else delete parent[last];
    return true;
  };
  const cloneDeep = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
  const merge = (target, ...sources) => {
    for (const source of sources) {
      if (!isObject(source)) continue;
      for (const key of Object.keys(source)) {
        const value = source[key];
        if (isObject(value) && isObject(target[key]) && Array.isArray(value) === Array.isArray(target[key])) merge(target[key], value);
        else if (value !== undefined) target[key] = isObject(value) ? cloneDeep(value) : value;
      }
    }
    return target;
  };
  const lodash = freeze({
    get, set, has, unset, merge, cloneDeep, toPath, isObject, isPlainObject,
    isArray: Array.isArray,
    isString: (value) => typeof value === "string",
    isNumber: (value) => typeof value === "number",
    isNil: (value) => value === null || value === undefined,
    assign: Object.assign,
    keys: (value) => (isObject(value) ? Object.keys(value) : []),
    values: (value) => (isObject(value) ? Object.values(value) : []),
    clamp: (value, lower, upper) => Math.min(Math.max(value, lower), upper),
    update: (object, path, updater) => set(object, path, updater(get(object, path))),
  });
  globalThis._ = lodash;

  // Determinism: the same message gives the same snapshot, so randomness is seeded from the
  // message and "now" is the message's time (or 0).
  let seed = 1;
  let now = 0;
  Math.random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let mixed = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
  // `Date` is replaced, not extended: a subclass would keep the real constructor (and its
  // clock) one `Object.getPrototypeOf(Date)` away. The real one stays reachable only here.
  const RealDate = Date;
  const DeterministicDate = function Date(...parts) {
    if (new.target === undefined) return apply(RealDate.prototype.toString, construct(RealDate, [now]), []);
    return construct(RealDate, parts.length === 0 ? [now] : parts, new.target);
  };
  DeterministicDate.prototype = RealDate.prototype;
  DeterministicDate.now = () => now;
  DeterministicDate.parse = RealDate.parse;
  DeterministicDate.UTC = RealDate.UTC;
  Object.defineProperty(RealDate.prototype, "constructor", { value: DeterministicDate, writable: false, configurable: false });
  globalThis.Date = freeze(DeterministicDate);

  const patterns = new Map();
  const describe = (value) => (value === null ? "null" : isArray(value) ? "an array" : typeof value);
  const isRecord = (value) => value !== null && typeof value === "object" && !isArray(value);
  globalThis.__synapse = freeze({
    // Compiles and runs one function; its context is made for this call alone.
    run(source, snapshotJson, argsJson, contextJson, randomSeed, time) {
      seed = randomSeed | 0;
      now = time;
      const body = new MakeFunction("snapshot", "args", "context", "_", source);
      const snapshot = parse(snapshotJson);
      const result = apply(body, undefined, [snapshot, parse(argsJson), freeze(parse(contextJson)), lodash]);
      const output = result === undefined ? snapshot : result;
      if (!isRecord(output)) {
        throw new TypeError("the function must return the snapshot object (or nothing), not " + describe(output));
      }
      return stringify(output);
    },
    check(source) {
      new MakeFunction("snapshot", "args", "context", "_", source);
      return "ok";
    },
    match(source, flags, text) {
      const key = flags + "/" + source;
      let pattern = patterns.get(key);
      if (pattern === undefined) {
        pattern = new MakeRegExp(source, flags);
        patterns.set(key, pattern);
      }
      pattern.lastIndex = 0;
      const found = [];
      let match;
      while ((match = apply(exec, pattern, [text])) !== null) {
        apply(push, found, [[match.index, match[0].length, match.slice(1).map((group) => (group === undefined ? null : group))]]);
        if (match[0].length === 0) pattern.lastIndex += 1;
      }
      return stringify(found);
    },
  });
})();
