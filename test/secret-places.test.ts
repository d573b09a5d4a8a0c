import { describe, expect, test } from "vitest";
import { SECRET_PLACES, secretPlaceTouched } from "../src/containment/secret-places.js";

describe("secretPlaceTouched", () => {
  const home = "/home/ada";

  test.each([
    ["a secret place itself", "/home/ada/.ssh", "/home/ada/.ssh"],
    ["a path inside one", "/home/ada/.ssh/id_ed25519", "/home/ada/.ssh"],
    ["a place two names deep", "/home/ada/.config/gh/hosts.yml", "/home/ada/.config/gh"],
    ["a directory that holds one", "/home/ada/.config", "/home/ada/.config/git"],
    ["the home itself, which holds them all", "/home/ada", "/home/ada/.ssh"],
    ["a directory above the home", "/home", "/home/ada/.ssh"],
    ["a file place", "/home/ada/.npmrc", "/home/ada/.npmrc"],
  ])("%s", (_, path, place) => {
    expect(secretPlaceTouched(path, home)).toBe(place);
  });

  test.each([
    ["a toolchain's root", "/home/ada/.pyenv"],
    ["a file deep in it", "/home/ada/.pyenv/versions/3.12.1/lib/python3.12/os.py"],
    ["a sibling of a place sharing its first name", "/home/ada/.config/nvim/init.lua"],
    ["a name that only starts like a place", "/home/ada/.sshd/config"],
    ["a path outside the home", "/opt/tool/.ssh"],
    ["another home", "/home/adam/.ssh"],
  ])("%s touches none", (_, path) => {
    expect(secretPlaceTouched(path, home)).toBeNull();
  });

  test("every place is found below a home given with a trailing slash or unnormalized", () => {
    for (const given of ["/home/ada/", "/home/./ada", "/home/x/../ada"]) {
      for (const place of SECRET_PLACES) {
        expect(secretPlaceTouched(`/home/ada/${place}/inner`, given)).toBe(`/home/ada/${place}`);
      }
      expect(secretPlaceTouched("/home/ada/.pyenv/shims", given)).toBeNull();
    }
  });

  test("answers for a second home after a first (nothing of the first is kept)", () => {
    expect(secretPlaceTouched("/root/.aws/config", "/root")).toBe("/root/.aws");
    expect(secretPlaceTouched("/root/.aws/config", home)).toBeNull();
    expect(secretPlaceTouched("/home/ada/.aws/config", home)).toBe("/home/ada/.aws");
  });
});
