/**
 * @module core/errors/config-syntax
 * Catalogue: config.pbtxt that does not parse (core/config/text-lexer.ts, text-format.ts). Each
 * error reads `<file>:<line>:<column>: <text>`; where protobuf's own text-format parser has a
 * wording (unknown field, field given twice, oneof clash, unknown enum value), the text is its.
 */
import { configEntries, type ConfigEntry } from './config-error.js';

/** Where the parser stopped, and the field it was reading (when it knows). */
export interface SyntaxSite {
  file: string;
  line: number;
  column: number;
  field?: string;
}

export type SyntaxEntry<A extends unknown[]> = ConfigEntry<SyntaxSite, A>;

const syntax = configEntries('{file}:{line}:{column}: ', (site: SyntaxSite) => ({
  holes: { file: site.file, line: site.line, column: site.column },
  at: { file: site.file, line: site.line, field: site.field },
}));

const none = () => ({});

export const configSyntax = {
  // Lexical errors.
  lexUnexpectedChar: syntax({ text: "unexpected character '{char}'", when: 'A character no token starts with.' }, (char: string) => ({ char })),
  lexHexDigits: syntax({ text: '"0x" must be followed by hex digits', when: 'A bare 0x.' }, none),
  lexOctal: syntax({ text: "invalid octal number '0{digits}'", when: 'An octal literal with 8 or 9.' }, (digits: string) => ({ digits })),
  lexExponent: syntax({ text: '"e" must be followed by an exponent', when: 'A float with an empty exponent.' }, none),
  lexNumberIdent: syntax({ text: 'need space between number and identifier', when: 'A number run into a name (1abc).' }, none),
  lexUnterminated: syntax({ text: 'unterminated string', when: 'A string without its closing quote.' }, none),
  lexStringNewline: syntax({ text: 'string literals cannot cross line boundaries', when: 'A newline inside a string.' }, none),
  lexEscapeHex: syntax({ text: '"\\x" must be followed by hex digits', when: 'A \\x escape without digits.' }, none),
  lexEscapeDigits: syntax(
    { text: '"\\{sequence}" must be followed by {count} hex digits', when: 'A \\u or \\U escape with too few digits.' },
    (sequence: string, count: number) => ({ sequence, count }),
  ),
  lexUnicode: syntax({ text: 'invalid unicode escape "\\{sequence}"', when: 'A unicode escape above U+10FFFF.' }, (sequence: string) => ({ sequence })),
  lexEscape: syntax({ text: 'invalid escape sequence "\\{sequence}"', when: 'An unknown backslash escape.' }, (sequence: string) => ({ sequence })),

  // Structure.
  syntaxDepth: syntax({ text: 'message nesting deeper than {max}', when: 'Messages nested past the limit.' }, (max: number) => ({ max })),
  syntaxEnd: syntax({ text: "unexpected end of input, expected '{close}'", when: 'The file ends inside a message or map entry.' }, (close: string) => ({
    close,
  })),
  syntaxExtension: syntax({ text: "extension and Any syntax '[...]' is not supported in {type}", when: 'A [bracketed] field name.' }, (type: string) => ({
    type,
  })),
  syntaxFieldName: syntax({ text: 'expected a field name, got {token}', when: 'Something other than a name where a field starts.' }, (token: string) => ({
    token,
  })),
  syntaxUnknownField: syntax(
    { text: 'Message type "{type}" has no field named "{name}".', when: "A field the message does not have (protobuf's text)." },
    (type: string, name: string) => ({ type, name }),
  ),
  syntaxRepeatedTwice: syntax(
    { text: 'Non-repeated field "{name}" is specified multiple times.', when: "A non-repeated field given twice (protobuf's text; Triton refuses it too)." },
    (name: string) => ({ name }),
  ),
  syntaxOneof: syntax(
    {
      text: 'Field "{name}" is specified along with field "{other}", another member of oneof "{oneof}".',
      when: "Two members of one oneof (protobuf's text).",
    },
    (name: string, other: string, oneof: string) => ({ name, other, oneof }),
  ),
  syntaxColon: syntax({ text: "expected ':' after field '{name}', got {token}", when: 'A scalar field without its colon.' }, (name: string, token: string) => ({
    name,
    token,
  })),
  syntaxNotRepeated: syntax(
    { text: "field '{name}' in {type} is not repeated; a list is not allowed", when: 'A [list] for a singular field.' },
    (name: string, type: string) => ({ name, type }),
  ),
  syntaxOpenMessage: syntax(
    { text: "expected '{' to open {type}, got {token}", when: 'A message field not followed by { or <.' },
    (type: string, token: string) => ({ type, token }),
  ),
  syntaxListSeparator: syntax({ text: "expected ',' or ']' in list, got {token}", when: 'A malformed [list].' }, (token: string) => ({ token })),
  syntaxOpenMapEntry: syntax(
    { text: "expected '{' to open an entry of map '{map}', got {token}", when: 'A map entry not opened by { or <.' },
    (map: string, token: string) => ({ map, token }),
  ),
  syntaxMapMember: syntax(
    { text: 'expected "key" or "value" in an entry of map \'{map}\', got {token}', when: 'A map entry with something other than key/value.' },
    (map: string, token: string) => ({ map, token }),
  ),
  syntaxMapColon: syntax(
    { text: "expected ':' after '{member}' in map '{map}'", when: 'A map key or value without its colon.' },
    (member: 'key' | 'value', map: string) => ({ member, map }),
  ),

  // Values.
  syntaxEnumName: syntax(
    { text: 'Unknown enumeration value of "{value}" for field "{field}".', when: "An enum name the type does not have (protobuf's text)." },
    (value: string, field: string) => ({ value, field }),
  ),
  syntaxEnumRange: syntax(
    { text: "enum value {value} out of range for field '{field}'", when: 'An enum number outside int32.' },
    (value: bigint, field: string) => ({ value, field }),
  ),
  syntaxEnumToken: syntax(
    { text: "expected an enumeration value of {type} for field '{field}', got {token}", when: 'Neither an enum name nor a number.' },
    (type: string, field: string, token: string) => ({ type, field, token }),
  ),
  syntaxString: syntax(
    { text: "expected a string for field '{field}', got {token}", when: 'A string field given something else.' },
    (field: string, token: string) => ({ field, token }),
  ),
  syntaxBool: syntax(
    { text: "invalid value {token} for boolean field '{field}' (expected true or false)", when: 'A bool field given something else.' },
    (token: string, field: string) => ({ token, field }),
  ),
  syntaxNumber: syntax(
    { text: "expected a number for field '{field}', got {token}", when: 'A numeric field given something else.' },
    (field: string, token: string) => ({ field, token }),
  ),
  syntaxInteger: syntax(
    { text: "expected an integer for field '{field}', got {token}", when: 'An integer field given a float (or a sign on an unsigned field).' },
    (field: string, token: string) => ({ field, token }),
  ),
  syntaxRange: syntax(
    { text: "value {value} out of range for {type} field '{field}'", when: 'An integer outside its field type.' },
    (value: bigint | number, type: string, field: string) => ({ value, type, field }),
  ),
} as const;
