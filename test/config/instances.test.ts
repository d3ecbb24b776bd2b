import { describe, expect, it } from 'vitest';
import { expandInstances } from '../../src/core/config/instances.js';
import { normalizeModelConfig } from '../../src/core/config/normalize.js';
import { parseModelConfigText } from '../../src/core/config/parse.js';

const expand = (text: string, gpus: number[] = []) =>
  expandInstances(
    normalizeModelConfig(parseModelConfigText(`backend: "python"\n${text}`, 'config.pbtxt'), {
      modelName: 'm',
      gpuCount: gpus.length,
      gpus,
    }),
  ).map(({ name, kind, deviceId }) => [name, kind, deviceId]);

describe('expandInstances', () => {
  it('no instance_group: one CPU instance <model>_0', () => {
    expect(expand('')).toEqual([['m_0', 'CPU', 0]]);
  });

  it('no instance_group on a GPU host: one instance per GPU, same name', () => {
    expect(expand('', [0, 1])).toEqual([
      ['m_0', 'GPU', 0],
      ['m_0', 'GPU', 1],
    ]);
  });

  it('unnamed CPU group with count 2 (init_args style): <model>_<group>_<c>', () => {
    expect(expand('instance_group [ { count: 2 kind: KIND_CPU } ]')).toEqual([
      ['m_0_0', 'CPU', 0],
      ['m_0_1', 'CPU', 0],
    ]);
  });

  it('KIND_GPU count c on gpus [g...]: c instances per GPU, device id = GPU ordinal', () => {
    expect(expand('instance_group [ { name: "g" count: 2 kind: KIND_GPU gpus: [ 1, 3 ] } ]', [0, 1, 2, 3])).toEqual([
      ['g_0', 'GPU', 1],
      ['g_0', 'GPU', 3],
      ['g_1', 'GPU', 1],
      ['g_1', 'GPU', 3],
    ]);
  });

  it('KIND_MODEL reports kind MODEL and device 0; several groups keep config order', () => {
    expect(expand('instance_group [ { kind: KIND_MODEL }, { name: "cpu" kind: KIND_CPU count: 1 }, { kind: KIND_AUTO } ]', [0])).toEqual([
      ['m_0_0', 'MODEL', 0],
      ['cpu_0', 'CPU', 0],
      ['m_2_0', 'GPU', 0],
    ]);
  });

  it('returns group name, index and passive flag', () => {
    const cfg = normalizeModelConfig(parseModelConfigText('backend: "python" instance_group { name: "p" count: 2 kind: KIND_CPU passive: true }', 'c'), {
      modelName: 'm',
      gpuCount: 0,
      gpus: [],
    });
    expect(expandInstances(cfg)).toEqual([
      { name: 'p_0', kind: 'CPU', deviceId: 0, groupName: 'p', index: 0, passive: true, hostPolicy: 'cpu' },
      { name: 'p_1', kind: 'CPU', deviceId: 0, groupName: 'p', index: 1, passive: true, hostPolicy: 'cpu' },
    ]);
  });

  it("takes the group's host_policy, else Triton's default for the kind", () => {
    const cfg = normalizeModelConfig(
      parseModelConfigText(
        'backend: "python" instance_group [{ name: "a" count: 1 kind: KIND_CPU host_policy: "pinned" }, { name: "b" count: 1 kind: KIND_CPU }, { name: "c" count: 1 kind: KIND_MODEL }]',
        'c',
      ),
      { modelName: 'm', gpuCount: 0, gpus: [] },
    );
    expect(expandInstances(cfg).map((i) => [i.name, i.hostPolicy])).toEqual([
      ['a_0', 'pinned'],
      ['b_0', 'cpu'],
      ['c_0', 'model'],
    ]);
  });
});
