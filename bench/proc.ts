// What Linux's /proc says of a process of the run: its memory, and the CPU time all its threads have
// used. NaN where /proc is not available.
import { readFileSync } from "node:fs";

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

/** User plus system CPU time of a process so far, every thread counted, in seconds. */
export function cpuSeconds(pid: number): number {
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return Number.NaN;
  }
}
