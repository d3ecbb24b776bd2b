/**
 * @module core/config/validate-sequence
 * Load-time checks of `sequence_batching`'s control inputs and direct strategy, with the texts
 * Triton's config checks give (docs/protocol-notes.md, "Sequence batching"): a sequence model's
 * config that Triton refuses is refused here with the same words, before tritium says that it
 * does not run the sequence batcher yet (core/model/config-builder.ts).
 */
import { DataType, ModelSequenceBatching_Control_Kind, type ModelSequenceBatching } from '../../generated/model_config_pb.js';
import { Errors } from '../errors.js';
import type { Report } from '../errors/config-rules.js';

const KIND_NAMES: Record<ModelSequenceBatching_Control_Kind, string> = {
  [ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_START]: 'CONTROL_SEQUENCE_START',
  [ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_READY]: 'CONTROL_SEQUENCE_READY',
  [ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_END]: 'CONTROL_SEQUENCE_END',
  [ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_CORRID]: 'CONTROL_SEQUENCE_CORRID',
};

/** The data types a CORRID control may have. */
const CORRID_TYPES = new Set([DataType.TYPE_UINT64, DataType.TYPE_INT64, DataType.TYPE_UINT32, DataType.TYPE_INT32, DataType.TYPE_STRING]);

export function checkSequenceBatching(sb: ModelSequenceBatching, model: string, report: Report): void {
  const names = new Set<string>();
  const kinds = new Set<ModelSequenceBatching_Control_Kind>();
  sb.controlInput.forEach((input, i) => {
    const path = `sequence_batching.control_input[${i}]`;
    if (input.name === '') report(`${path}.name`, Errors.ruleSequenceControlName, model);
    else if (names.has(input.name)) report(`${path}.name`, Errors.ruleSequenceControlKinds, input.name, model);
    names.add(input.name);
    input.control.forEach((control, j) => {
      const at = `${path}.control[${j}]`;
      const kind = KIND_NAMES[control.kind] ?? String(control.kind);
      if (kinds.has(control.kind)) report(`${at}.kind`, Errors.ruleSequenceControlMultiple, kind, model);
      kinds.add(control.kind);
      const lists: Array<[string, number]> = [
        ['int32_false_true', control.int32FalseTrue.length],
        ['fp32_false_true', control.fp32FalseTrue.length],
        ['bool_false_true', control.boolFalseTrue.length],
      ];
      const given = lists.filter(([, n]) => n > 0);
      if (control.kind === ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_CORRID) {
        if (given.length > 0) report(`${at}.${given[0]![0]}`, Errors.ruleSequenceCorridValues, model);
        else if (!CORRID_TYPES.has(control.dataType)) report(`${at}.data_type`, Errors.ruleSequenceCorridType, model);
        return;
      }
      if (given.length === 0) report(at, Errors.ruleSequenceControlValuesMissing, kind, model);
      else if (given.length > 1) report(at, Errors.ruleSequenceControlValuesMany, kind, model);
      else if (given[0]![1] !== 2) report(`${at}.${given[0]![0]}`, Errors.ruleSequenceControlValuesPair, given[0]![0], kind, model);
    });
  });
  const strategy = sb.strategyChoice;
  if (strategy.case === 'direct') {
    const u = strategy.value.minimumSlotUtilization;
    // Triton's text says (0.0, 1.0], but its check lets 0 through (the default: no delay).
    if (!(u >= 0 && u <= 1)) report('sequence_batching.direct.minimum_slot_utilization', Errors.ruleSequenceSlotUtilization, model);
  }
}
