// Canonical time zone names: any case, any link of a zone, one name for it; the runtime's CLDR names
// that IANA has replaced are answered by IANA's; and, where the system has IANA's zone.tab, every name
// in it is canonical as it is written there.
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { canonicalTimeZone } from "../../src/funds/time-zone.js";

const ZONE_TAB = "/usr/share/zoneinfo/zone.tab";

const swapCase = (name: string) => [...name].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("");

describe("canonicalTimeZone", () => {
  it("knows IANA zone names, in any case, and nothing else", () => {
    expect(["Europe/Paris", "europe/paris", "EUROPE/PARIS", "Europe/paris"].map(canonicalTimeZone)).toEqual(Array(4).fill("Europe/Paris"));
    expect(["America/Santiago", "Pacific/Kiritimati", "Etc/GMT+12", "etc/gmt+12"].map(canonicalTimeZone)).toEqual(["America/Santiago", "Pacific/Kiritimati", "Etc/GMT+12", "Etc/GMT+12"]);
    expect(["", "Mars/Olympus", "UTC+1", "+01:00", "-05:00", "Europe/Paris "].map(canonicalTimeZone)).toEqual(Array(6).fill(undefined));
  });

  it("names UTC and its aliases UTC, as ECMAScript does", () => {
    for (const name of ["UTC", "utc", "Etc/UTC", "etc/utc", "Etc/UCT", "UCT", "GMT", "Etc/GMT", "Etc/GMT+0", "Etc/GMT-0", "Etc/Zulu", "Zulu", "Universal", "Etc/Universal", "Greenwich"]) {
      expect(canonicalTimeZone(name), name).toBe("UTC");
    }
  });

  it("names a link by its zone's current IANA name", () => {
    expect(canonicalTimeZone("US/Eastern")).toBe("America/New_York");
    expect(canonicalTimeZone("us/pacific")).toBe("America/Los_Angeles");
    expect(canonicalTimeZone("Asia/Calcutta")).toBe("Asia/Kolkata");
    expect(canonicalTimeZone("asia/kolkata")).toBe("Asia/Kolkata");
    expect(canonicalTimeZone("Europe/Kiev")).toBe("Europe/Kyiv");
    expect(canonicalTimeZone("America/Buenos_Aires")).toBe("America/Argentina/Buenos_Aires");
  });

  it("is canonical for every zone the runtime knows, whatever case it is written in; a canonical name is its own", () => {
    const names = Intl.supportedValuesOf("timeZone");
    expect(names.length).toBeGreaterThan(400);
    for (const name of names) {
      const canonical = canonicalTimeZone(name);
      expect(canonical, name).toMatch(/^[A-Z]/);
      expect(canonicalTimeZone(canonical!), name).toBe(canonical);
      expect(canonicalTimeZone(name.toLowerCase()), name).toBe(canonical);
      expect(canonicalTimeZone(swapCase(name)), name).toBe(canonical);
    }
  });

  it.runIf(existsSync(ZONE_TAB))("answers every name of IANA's zone.tab as written there", () => {
    const names = readFileSync(ZONE_TAB, "utf8")
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"))
      .map((line) => line.split("\t")[2]!);
    expect(names.length).toBeGreaterThan(300);
    expect(names.filter((name) => canonicalTimeZone(name) !== name)).toEqual([]);
  });
});
