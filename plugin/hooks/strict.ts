// specrun strict mode (Claude Code 2.1.287 and later, early-access hooks modules): every
// agent spawn, a Workflow script's agent() calls included, is put to specrun's PreToolUse
// guard before it starts, so a halted, cancelled or capped execution starts no agent.
// Off unless the person started Claude Code with SPECRUN_STRICT=1. A guard that cannot
// answer (no binary, a timeout, a reply it cannot read) lets the spawn go on: a hook must
// never trap a session.
import type { Register } from 'claude-code'

export const register: Register = on => {
  on('agent.spawn', async ($, e, next) => {
    if ((await $.env.get('SPECRUN_STRICT')) !== '1') return next(e)
    const env = await $.process.hookEnv()
    const asked = {
      hook_event_name: 'PreToolUse',
      session_id: env.CLAUDE_CODE_SESSION_ID,
      cwd: env.CLAUDE_PROJECT_DIR,
      tool_name: e.workflow === undefined ? 'Agent' : 'Workflow',
      tool_input: { prompt: e.prompt, description: e.description, subagent_type: e.subagentType },
      specrun_spawn: { workflow: e.workflow ?? null, resume: e.resume !== undefined },
    }
    const ran = await $.process.run([`${$.plugin.root}/bin/specrun`, 'hook', 'pre-tool-use'], {
      stdin: JSON.stringify(asked),
      env,
      timeoutMs: 5000,
    })
    const reason = denial(ran.stdout)
    return reason === undefined ? next(e) : { deny: reason }
  }).catch(($, e, next) => next(e))
}

// The deny reason in a PreToolUse answer, or undefined for any other answer.
function denial(stdout: string): string | undefined {
  try {
    const out = JSON.parse(stdout).hookSpecificOutput
    return out?.permissionDecision === 'deny' ? String(out.permissionDecisionReason) : undefined
  } catch {
    return undefined
  }
}
