// What Linux's /proc says of the run: a process's memory and the CPU time all its threads have used,
// the CPU time of the processes of one name (PostgreSQL's), and the machine's busy and idle time.
// NaN where /proc is not available; no process of the name then.
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks a second of /proc/<pid>/stat's times: USER_HZ, 100 on Linux whatever the kernel's HZ. */
const USER_HZ = 100;

/** VmRSS of a process in MiB. */
export function rssMiB(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** User plus system CPU time in seconds from the text of a /proc/<pid>/stat (10 ms steps). */
export function statCpuSeconds(stat: string): number {
  // After the command name (in parentheses, and it may hold spaces or parentheses) the fields start
  // at the third of proc(5): utime and stime, its 14th and 15th, are the 12th and 13th here.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
}

/** The command name of a /proc/<pid>/stat text: between the first "(" and the last ")". */
export function statCommand(stat: string): string {
  return stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
}

/** The CPU time so far of every process whose command name is `name`, by pid, in seconds. */
export function cpuSecondsOf(name: string): Map<number, number> {
  const out = new Map<number, number>();
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (statCommand(stat) === name) out.set(Number(pid), statCpuSeconds(stat));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/**
 * The CPU time the processes of `after` used since `before` (both from `cpuSecondsOf`), in seconds:
 * a process started meanwhile counts from zero; one gone meanwhile is not counted.
 */
export function cpuSecondsSince(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/** User plus system CPU time of a process so far, every thread counted, in seconds. */
export function cpuSeconds(pid: number): number {
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return Number.NaN;
  }
}

/** The machine's CPU time so far, every CPU: busy (user, nice, system, irq, softirq) and idle (idle, iowait), in seconds. */
export interface MachineCpu {
  busy: number;
  idle: number;
}

/**
 * Reads the first line of /proc/stat's text ("cpu user nice system idle iowait irq softirq steal
 * ..."). Steal (time the hypervisor gave another guest) is neither: no process here could use it.
 */
export function statMachineCpu(stat: string): MachineCpu {
  const fields = (stat.split("\n", 1)[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0] = fields;
  return { busy: (user + nice + system + irq + softirq) / USER_HZ, idle: (idle + iowait) / USER_HZ };
}

/** The machine's CPU time so far; NaN where /proc is not available. */
export function machineCpu(): MachineCpu {
  try {
    return statMachineCpu(readFileSync("/proc/stat", "utf8"));
  } catch {
    return { busy: Number.NaN, idle: Number.NaN };
  }
}
