/**
 * @module frontends/metrics/descriptor-families
 * tritium's descriptor families, read at each scrape: how many descriptors the process has open
 * and may open, and how many times it ran out (frontends/descriptor-watch.ts). Operators alert
 * on the first two approaching each other before clients notice closed connections.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { type DescriptorWatch, openDescriptors } from '../descriptor-watch.js';

export function registerDescriptorFamilies(registry: Registry, watch: DescriptorWatch): void {
  const registers = [registry];
  new Gauge({
    name: 'tritium_descriptors_open',
    help: 'File descriptors the server process has open',
    registers,
    collect() {
      const open = openDescriptors();
      if (open !== undefined) this.set(open);
    },
  });
  if (watch.limit !== undefined) {
    const limit = watch.limit;
    new Gauge({
      name: 'tritium_descriptors_limit',
      help: 'File descriptors the server process may open (soft RLIMIT_NOFILE)',
      registers,
      collect() {
        this.set(limit);
      },
    });
  }
  new Counter({
    name: 'tritium_descriptor_exhaustion_total',
    help: 'Times the server ran out of file descriptors (one per burst); meanwhile new client connections are closed as they arrive',
    registers,
    collect() {
      this.reset();
      this.inc(watch.exhaustions);
    },
  });
}
