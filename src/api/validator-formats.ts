/**
 * The formats ajv checks strings against, as ajv format definitions: Strait's (src/api/formats.ts, each
 * by its own parser) and RFC 3339 date-time (ajv-formats'). The build compiles the validators with them
 * (write-validators.ts), and the validators it writes require them from here at run time.
 */
import type { Format } from 'ajv';
import { fullFormats } from 'ajv-formats/dist/formats';
import { type ApiFormatName, apiFormats, formatProblem } from './formats';

const strait = Object.fromEntries(
  (Object.keys(apiFormats) as ApiFormatName[]).map((name) => [
    name,
    { type: 'string', validate: (value: string) => formatProblem(name, value) === undefined },
  ]),
) as Record<ApiFormatName, Format>;

export const validatorFormats: Record<ApiFormatName | 'date-time', Format> = { ...strait, 'date-time': fullFormats['date-time'] };
