import type { Command } from 'commander';
import { bashCompletion } from './bash.js';
import { fishCompletion } from './fish.js';
import { completionModel } from './model.js';
import { zshCompletion } from './zsh.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** Where a distribution's shell looks for a completion script it loads on demand (the .deb and install.sh put them there). */
export const COMPLETION_FILES: Record<Shell, string> = {
  bash: 'usr/share/bash-completion/completions/wcf-agent',
  zsh: 'usr/share/zsh/vendor-completions/_wcf-agent',
  fish: 'usr/share/fish/vendor_completions.d/wcf-agent.fish',
};

/** The completion script for `shell`, written from `program` (buildProgram()). */
export function completionScript(program: Command, shell: Shell): string {
  const model = completionModel(program);
  return shell === 'bash' ? bashCompletion(model) : shell === 'zsh' ? zshCompletion(model) : fishCompletion(model);
}
