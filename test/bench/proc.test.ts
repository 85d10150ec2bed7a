// The bench's reading of /proc/<pid>/stat (utime and stime, found after a command name that may
// hold spaces and parentheses) and of /proc/stat's first line, in USER_HZ ticks.
import { describe, expect, it } from "vitest";
import { cpuSecondsSince, statCommand, statCpuSeconds, statMachineCpu } from "../../bench/proc.js";

describe("statCpuSeconds", () => {
  it("adds utime and stime (fields 14 and 15 of proc(5)) in seconds", () => {
    const stat = "4242 (node) S 1 4242 4242 0 -1 4194560 5000 0 0 0 1234 56 0 0 20 0 11 0 100 1000000 20000 18446744073709551615";
    expect(statCpuSeconds(stat)).toBeCloseTo(12.9);
  });

  it("is not misled by a command name with spaces and parentheses", () => {
    const stat = "7 (my (odd) name) R 1 7 7 0 -1 0 0 0 0 0 300 200 0 0 20 0 1 0 5 0 0 0";
    expect(statCpuSeconds(stat)).toBeCloseTo(5);
  });
});

describe("statMachineCpu", () => {
  it("counts user, nice, system, irq and softirq as busy, idle and iowait as idle, and steal as neither", () => {
    const stat = "cpu  1000 10 500 8000 200 30 60 400 0 0\ncpu0 500 5 250 4000 100 15 30 200 0 0\nintr 12345";
    const cpu = statMachineCpu(stat);
    expect(cpu.busy).toBeCloseTo(16);
    expect(cpu.idle).toBeCloseTo(82);
  });
});

describe("the CPU time of processes by name", () => {
  it("reads the command name between the first '(' and the last ')'", () => {
    expect(statCommand("4242 (postgres) S 1 4242")).toBe("postgres");
    expect(statCommand("7 (my (odd) name) R 1 7")).toBe("my (odd) name");
  });

  it("adds what each process used since: one started meanwhile from zero, one gone not at all", () => {
    const before = new Map([[10, 5], [11, 2], [12, 9]]);
    const after = new Map([[10, 6.5], [11, 2.25], [13, 0.5]]);
    expect(cpuSecondsSince(before, after)).toBeCloseTo(1.5 + 0.25 + 0.5);
  });
});
