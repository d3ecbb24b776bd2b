/**
 * Benchmark helper: the cells of bench/vs-triton.mjs, which bench/floor.mjs measures too. A cell
 * is one model under one protocol at one client concurrency, named <model>/<protocol>/c<N>.
 */

/** The two small Python models of bench/models/vs-triton. */
export const SMALL_MODELS = ['add_sub', 'identity_fp32'];
export const PROTOCOLS = ['http', 'grpc'];
export const CONCURRENCIES = [1, 4, 16];

/** Every model × protocol × concurrency, in that nesting order, as { name, model, protocol, concurrency }. */
export function cellGrid(models = SMALL_MODELS, protocols = PROTOCOLS, concurrencies = CONCURRENCIES) {
  const cells = [];
  for (const model of models)
    for (const protocol of protocols)
      for (const concurrency of concurrencies) cells.push({ name: `${model}/${protocol}/c${concurrency}`, model, protocol, concurrency });
  return cells;
}

/** Whether `name` is selected by --only `only` (none: everything; else a name holding one of them). */
export function selected(name, only) {
  return only.length === 0 || only.some((s) => name.includes(s));
}

/** The cell's name as one path component (its output folder). */
export function cellDir(cell) {
  return cell.name.replaceAll('/', '-');
}

/** The port of `server` ({ httpPort, grpcPort }) that speaks the cell's protocol. */
export function cellPort(server, cell) {
  return cell.protocol === 'grpc' ? server.grpcPort : server.httpPort;
}
