/**
 * @module frontends/restricted-api
 * `--http-restricted-api` / `--grpc-restricted-protocol` `<api>[,<api>...]:<key>=<value>`
 * (repeatable): the endpoints of those API groups answer only requests carrying header `key`
 * with `value` (docs/protocol-notes.md, "Restricted APIs"). Over gRPC the header is
 * `triton-grpc-protocol-<key>`, as tritonserver 2.51 expects it.
 */

export const API_GROUPS = ['health', 'metadata', 'inference', 'shared-memory', 'model-config', 'model-repository', 'statistics', 'trace', 'logging'] as const;
export type ApiGroup = (typeof API_GROUPS)[number];

export interface Restriction {
  key: string;
  value: string;
}

/** The restriction of each group from the flag's values; throws an Error naming the flag for a bad one. */
export function parseRestrictions<G extends string = ApiGroup>(
  flag: string,
  values: readonly string[],
  groups: readonly G[] = API_GROUPS as unknown as readonly G[],
): Map<G, Restriction> {
  const out = new Map<G, Restriction>();
  for (const v of values) {
    const m = /^([^:]+):([^=]+)=(.*)$/.exec(v);
    if (!m) throw new Error(`${flag} expects <api>[,<api>...]:<key>=<value>, got '${v}'.`);
    for (const api of m[1]!.split(',').map((s) => s.trim())) {
      if (!(groups as readonly string[]).includes(api)) throw new Error(`${flag}=${v}: unknown API '${api}'; the APIs are ${groups.join(', ')}.`);
      out.set(api as G, { key: m[2]!.trim(), value: m[3]! });
    }
  }
  return out;
}

/** The header name a request must carry for `r`, or undefined when the headers satisfy it. */
export function missingHeader(r: Restriction | undefined, headers: Record<string, string | string[] | undefined>, prefix = ''): string | undefined {
  if (r === undefined) return undefined;
  const name = `${prefix}${r.key}`;
  const got = headers[name.toLowerCase()];
  return got === r.value ? undefined : name;
}
