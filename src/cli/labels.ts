// `--label name=value`, the flag of `leash run` and `leash mcp` that labels the plan they configure.
import { Option } from 'commander';
import { parseLabelArgument, validateLabels, type Labels } from '../guardrails/labels.js';

/** The repeatable `--label name=value` flag; its values are read by {@link labelsOf}. */
export function labelOption(description: string): Option {
  return new Option('--label <name=value>', description).argParser(
    (value: string, previous: readonly string[] | undefined) => [...(previous ?? []), value],
  );
}

/**
 * The labels the `--label` flags give, the last of one name winning. Read in the command's action, not
 * while the arguments are parsed, so a bad one is a validation error (exit 2) naming the flag and value.
 */
export function labelsOf(given: readonly string[] | undefined): Labels {
  const labels: Record<string, string> = {};
  for (const text of given ?? []) {
    const [name, value] = parseLabelArgument(text, '--label');
    labels[name] = value;
  }
  return validateLabels(labels, '--label');
}
