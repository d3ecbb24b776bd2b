import { describe, expect, it } from 'vitest';
import { DataType, dataTypeByteSize, dataTypeName, dataTypeToProtocol, protocolToDataType } from '../../src/core/config/schema.js';

describe('datatype helpers', () => {
  it('maps every config enum to its protocol name and back', () => {
    const pairs: Array<[DataType, string, number]> = [
      [DataType.TYPE_BOOL, 'BOOL', 1],
      [DataType.TYPE_UINT8, 'UINT8', 1],
      [DataType.TYPE_UINT16, 'UINT16', 2],
      [DataType.TYPE_UINT32, 'UINT32', 4],
      [DataType.TYPE_UINT64, 'UINT64', 8],
      [DataType.TYPE_INT8, 'INT8', 1],
      [DataType.TYPE_INT16, 'INT16', 2],
      [DataType.TYPE_INT32, 'INT32', 4],
      [DataType.TYPE_INT64, 'INT64', 8],
      [DataType.TYPE_FP16, 'FP16', 2],
      [DataType.TYPE_FP32, 'FP32', 4],
      [DataType.TYPE_FP64, 'FP64', 8],
      [DataType.TYPE_STRING, 'BYTES', 0],
      [DataType.TYPE_BF16, 'BF16', 2],
    ];
    for (const [dt, name, size] of pairs) {
      expect(dataTypeToProtocol(dt)).toBe(name);
      expect(protocolToDataType(name)).toBe(dt);
      expect(dataTypeByteSize(dt)).toBe(size);
    }
    expect(DataType.TYPE_STRING).toBe(13);
    expect(DataType.TYPE_BF16).toBe(14);
  });

  it('handles invalid names and values', () => {
    expect(dataTypeToProtocol(DataType.TYPE_INVALID)).toBe('');
    expect(protocolToDataType('STRING')).toBe(DataType.TYPE_INVALID);
    expect(protocolToDataType('fp32')).toBe(DataType.TYPE_INVALID);
    expect(dataTypeName(DataType.TYPE_FP32)).toBe('TYPE_FP32');
    expect(dataTypeName(99 as DataType)).toBe('99');
  });
});
