#!/usr/bin/python3
"""Checks META.json against the PGXN Meta Spec v1.0.0 (https://pgxn.org/spec/), and
against the rest of the tree: the version it gives must be the one that
idempotent_inbox.control installs by default, that debian/changelog packages and that
the newest install script creates, and its PostgreSQL requirement the oldest major that
debian/pgversions builds for.

Debian packages no PGXN validator (PGXN's own is a Perl module on CPAN), so this is the
spec's rules written out with the standard library only.  Prints TAP: one "ok" or
"not ok" per rule, each failure followed by what was wrong, and exits 1 when any failed.

    python3 test/package/meta.py [REPOSITORY_ROOT]
"""

import json
import os
import re
import sys

# The spec's top-level keys; any other must be a custom key (x_ or X_).
REQUIRED = ("name", "version", "abstract", "maintainer", "license", "provides", "meta-spec")
OPTIONAL = ("description", "generated_by", "tags", "no_index", "prereqs",
            "release_status", "resources")
# The license strings the spec names.
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
    "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown",
}
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
RELEASE_STATUSES = {"stable", "testing", "unstable"}
SPEC_URLS = {"https://pgxn.org/meta/spec.txt", "http://pgxn.org/meta/spec.txt"}

# Semantic versions: three integers without leading zeros, then an optional pre-release
# and build metadata.
_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER = re.compile(
    rf"{_NUM}\.{_NUM}\.{_NUM}"
    rf"(?:-{_PRE_ID}(?:\.{_PRE_ID})*)?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?")
RANGE_PART = re.compile(r"(?:(==|!=|<=|>=|<|>)\s*)?(\S+)")
# A Term: two characters or more, none of them a slash, backslash, space or control.
TERM_BAD = re.compile(r"[/\\\s\x00-\x1f\x7f]")
TAG_BAD = re.compile(r"[/\\\x00-\x1f\x7f]")
URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s]+[^\s]*")
CUSTOM = re.compile(r"[xX]_.")


class Checker:
    """Collects one TAP line per rule."""

    def __init__(self):
        self.results = []

    def check(self, name, problems):
        """problems: the list of what is wrong (empty when the rule holds)."""
        self.results.append((name, list(problems)))

    def report(self):
        print(f"1..{len(self.results)}")
        failed = 0
        for number, (name, problems) in enumerate(self.results, 1):
            if problems:
                failed += 1
                print(f"not ok {number} - {name}")
                for problem in problems:
                    print(f"#   {problem}")
            else:
                print(f"ok {number} - {name}")
        return failed


def is_text(value):
    return isinstance(value, str) and value != ""


def term_problems(where, value):
    if not isinstance(value, str):
        return [f"{where}: not a string"]
    if len(value) < 2 or TERM_BAD.search(value):
        return [f"{where}: {value!r} is not a Term (two characters or more, no slash, "
                "backslash, space or control character)"]
    return []


def version_problems(where, value):
    if not isinstance(value, str) or not SEMVER.fullmatch(value):
        return [f"{where}: {value!r} is not a semantic version (like 1.2.0)"]
    return []


def range_problems(where, value):
    # 0, as a number or a string, is "any version".
    if value == 0 or value == "0":
        return []
    if not isinstance(value, str) or value.strip() == "":
        return [f"{where}: {value!r} is not a version range"]
    problems = []
    for part in value.split(","):
        match = RANGE_PART.fullmatch(part.strip())
        if not match or not SEMVER.fullmatch(match.group(2)):
            problems.append(f"{where}: {part.strip()!r} is not an operator and a "
                            "semantic version (like '>= 1.2.0')")
    return problems


def path_problems(where, value, root, must_exist):
    if not is_text(value):
        return [f"{where}: not a non-empty string"]
    if value.startswith("/") or "\\" in value or ".." in value.split("/"):
        return [f"{where}: {value!r} is not a relative path in unix form"]
    if must_exist and not os.path.exists(os.path.join(root, value)):
        return [f"{where}: {value!r} is not in the distribution"]
    return []


def unknown_keys(where, mapping, known):
    return [f"{where}: unknown key {key!r} (custom keys start with x_ or X_)"
            for key in mapping if key not in known and not CUSTOM.match(key)]


def check_spec(c, meta, root):
    c.check("META.json is a JSON object",
            [] if isinstance(meta, dict) else ["the top level is not an object"])
    if not isinstance(meta, dict):
        return
    c.check("required keys are present",
            [f"missing required key {key!r}" for key in REQUIRED if key not in meta])
    c.check("no unknown top-level keys",
            unknown_keys("META.json", meta, set(REQUIRED) | set(OPTIONAL)))
    c.check("name is a Term", term_problems("name", meta.get("name")))
    c.check("version is a semantic version", version_problems("version", meta.get("version")))
    c.check("abstract is a non-empty string",
            [] if is_text(meta.get("abstract")) else ["abstract: not a non-empty string"])

    maintainer = meta.get("maintainer")
    if isinstance(maintainer, list):
        ok = maintainer != [] and all(is_text(m) for m in maintainer)
    else:
        ok = is_text(maintainer)
    c.check("maintainer is a string or a non-empty list of strings",
            [] if ok else [f"maintainer: {maintainer!r}"])

    c.check("license is a known license string, a list of them, or names mapped to URLs",
            license_problems(meta.get("license")))
    c.check("provides names each extension with its file and version",
            provides_problems(meta.get("provides"), root))
    c.check("meta-spec is version 1.0.x", meta_spec_problems(meta.get("meta-spec")))

    if "description" in meta:
        c.check("description is a non-empty string",
                [] if is_text(meta["description"]) else ["description: not a non-empty string"])
    if "generated_by" in meta:
        c.check("generated_by is a non-empty string",
                [] if is_text(meta["generated_by"]) else ["generated_by: not a non-empty string"])
    if "tags" in meta:
        c.check("tags are a non-empty list of Tags", tags_problems(meta["tags"]))
    if "no_index" in meta:
        c.check("no_index lists relative paths", no_index_problems(meta["no_index"], root))
    if "prereqs" in meta:
        c.check("prereqs map phases and relations to version ranges",
                prereqs_problems(meta["prereqs"]))
    if "release_status" in meta:
        status = meta["release_status"]
        c.check("release_status is stable, testing or unstable",
                [] if status in RELEASE_STATUSES else [f"release_status: {status!r}"])
    if "resources" in meta:
        c.check("resources are URLs", resources_problems(meta["resources"]))


def license_problems(value):
    if isinstance(value, str):
        return [] if value in LICENSES else [f"license: {value!r} is not a license string the spec names"]
    if isinstance(value, list):
        if not value:
            return ["license: an empty list"]
        return [f"license: {v!r} is not a license string the spec names"
                for v in value if v not in LICENSES]
    if isinstance(value, dict):
        if not value:
            return ["license: an empty object"]
        return [f"license: {name!r} maps to {url!r}, not a URL"
                for name, url in value.items() if not (isinstance(url, str) and URI.fullmatch(url))]
    return [f"license: {value!r}"]


def provides_problems(value, root):
    if not isinstance(value, dict) or not value:
        return ["provides: not a non-empty object"]
    problems = []
    for name, ext in value.items():
        where = f"provides/{name}"
        problems += term_problems(where, name)
        if not isinstance(ext, dict):
            problems.append(f"{where}: not an object")
            continue
        for key in ("file", "version"):
            if key not in ext:
                problems.append(f"{where}: missing required key {key!r}")
        if "file" in ext:
            problems += path_problems(f"{where}/file", ext["file"], root, True)
        if "version" in ext:
            problems += version_problems(f"{where}/version", ext["version"])
        if "abstract" in ext and not is_text(ext["abstract"]):
            problems.append(f"{where}/abstract: not a non-empty string")
        if "docfile" in ext:
            problems += path_problems(f"{where}/docfile", ext["docfile"], root, True)
        problems += unknown_keys(where, ext, {"file", "version", "abstract", "docfile"})
    return problems


def meta_spec_problems(value):
    if not isinstance(value, dict):
        return ["meta-spec: not an object"]
    problems = []
    version = value.get("version")
    if not (isinstance(version, str) and re.fullmatch(r"1\.0\.[0-9]+", version)):
        problems.append(f"meta-spec/version: {version!r} is not 1.0.x")
    if "url" in value and value["url"] not in SPEC_URLS:
        problems.append(f"meta-spec/url: {value['url']!r} is not the spec's address")
    return problems + unknown_keys("meta-spec", value, {"version", "url"})


def tags_problems(value):
    if not isinstance(value, list) or not value:
        return ["tags: not a non-empty list"]
    return [f"tags: {tag!r} is not a Tag (2 to 255 characters, no slash, backslash "
            "or control character)"
            for tag in value
            if not isinstance(tag, str) or not 2 <= len(tag) <= 255 or TAG_BAD.search(tag)]


def no_index_problems(value, root):
    if not isinstance(value, dict) or not ({"file", "directory"} & value.keys()):
        return ["no_index: not an object with file or directory"]
    problems = unknown_keys("no_index", value, {"file", "directory"})
    for key in ("file", "directory"):
        if key not in value:
            continue
        paths = value[key] if isinstance(value[key], list) else [value[key]]
        if not paths:
            problems.append(f"no_index/{key}: an empty list")
        for path in paths:
            problems += path_problems(f"no_index/{key}", path, root, False)
    return problems


def prereqs_problems(value):
    if not isinstance(value, dict) or not value:
        return ["prereqs: not a non-empty object"]
    problems = []
    for phase, relations in value.items():
        if CUSTOM.match(phase):
            continue
        if phase not in PHASES:
            problems.append(f"prereqs: {phase!r} is not a phase ({', '.join(sorted(PHASES))})")
            continue
        if not isinstance(relations, dict) or not relations:
            problems.append(f"prereqs/{phase}: not a non-empty object")
            continue
        for relation, extensions in relations.items():
            if CUSTOM.match(relation):
                continue
            if relation not in RELATIONS:
                problems.append(f"prereqs/{phase}: {relation!r} is not a relation "
                                f"({', '.join(sorted(RELATIONS))})")
                continue
            if not isinstance(extensions, dict):
                problems.append(f"prereqs/{phase}/{relation}: not an object")
                continue
            for name, version_range in extensions.items():
                where = f"prereqs/{phase}/{relation}/{name}"
                problems += term_problems(where, name)
                problems += range_problems(where, version_range)
    return problems


def resources_problems(value):
    if not isinstance(value, dict) or not value:
        return ["resources: not a non-empty object"]
    problems = unknown_keys("resources", value, {"homepage", "bugtracker", "repository"})

    def url(where, v):
        return [] if isinstance(v, str) and URI.fullmatch(v) else [f"{where}: {v!r} is not a URL"]

    if "homepage" in value:
        problems += url("resources/homepage", value["homepage"])
    tracker = value.get("bugtracker")
    if tracker is not None:
        if not isinstance(tracker, dict) or not ({"web", "mailto"} & tracker.keys()):
            problems.append("resources/bugtracker: not an object with web or mailto")
        else:
            problems += unknown_keys("resources/bugtracker", tracker, {"web", "mailto"})
            if "web" in tracker:
                problems += url("resources/bugtracker/web", tracker["web"])
            if "mailto" in tracker and "@" not in str(tracker["mailto"]):
                problems.append(f"resources/bugtracker/mailto: {tracker['mailto']!r}")
    repo = value.get("repository")
    if repo is not None:
        if not isinstance(repo, dict) or not ("web" in repo or {"url", "type"} <= repo.keys()):
            problems.append("resources/repository: not an object with web, or url and type")
        else:
            problems += unknown_keys("resources/repository", repo, {"url", "web", "type"})
            for key in ("url", "web"):
                if key in repo:
                    problems += url(f"resources/repository/{key}", repo[key])
            if "type" in repo and (not is_text(repo["type"]) or repo["type"] != repo["type"].lower()):
                problems.append(f"resources/repository/type: {repo['type']!r} is not lower case")
    return problems


def as_semver(version):
    """A PostgreSQL extension version (0.3) or Debian upstream version as x.y.z."""
    parts = version.split(".")
    return ".".join(parts + ["0"] * (3 - len(parts))) if len(parts) < 3 else version


def control_default_version(root):
    with open(os.path.join(root, "idempotent_inbox.control"), encoding="utf-8") as f:
        for line in f:
            match = re.match(r"\s*default_version\s*=\s*'([^']*)'", line)
            if match:
                return match.group(1)
    return None


def debian_upstream_version(root):
    with open(os.path.join(root, "debian", "changelog"), encoding="utf-8") as f:
        match = re.match(r"\S+ \(([^)]*)\)", f.readline())
    if not match:
        return None
    version = match.group(1).split(":")[-1]
    return version.rsplit("-", 1)[0]


def newest_install_script(root):
    """The version of the newest install script (not an update script)."""
    versions = []
    for name in os.listdir(root):
        match = re.fullmatch(r"idempotent_inbox--([0-9.]+)\.sql", name)
        if match:
            versions.append(tuple(int(n) for n in match.group(1).split(".")))
    if not versions:
        return None
    return ".".join(str(n) for n in max(versions))


def oldest_debian_major(root):
    with open(os.path.join(root, "debian", "pgversions"), encoding="utf-8") as f:
        for line in f:
            match = re.fullmatch(r"([0-9]+)\+?", line.strip())
            if match:
                return int(match.group(1))
    return None


def check_tree(c, meta, root):
    version = meta.get("version")
    default = control_default_version(root)
    debian = debian_upstream_version(root)
    newest = newest_install_script(root)

    def same(what, other):
        if other is None:
            return [f"no version found in {what}"]
        if as_semver(other) != version:
            return [f"{what} says {other} (as a semantic version {as_semver(other)}), "
                    f"META.json {version}"]
        return []

    c.check("version agrees with idempotent_inbox.control's default_version",
            same("idempotent_inbox.control", default))
    c.check("version agrees with debian/changelog",
            same("debian/changelog", debian))
    c.check("version agrees with the newest install script",
            same("the newest idempotent_inbox--*.sql", newest))
    ext = meta.get("provides", {}).get("idempotent_inbox", {})
    problems = []
    if ext.get("version") != version:
        problems.append(f"provides/idempotent_inbox/version is {ext.get('version')!r}")
    if newest is not None and ext.get("file") != f"idempotent_inbox--{newest}.sql":
        problems.append(f"provides/idempotent_inbox/file is {ext.get('file')!r}, "
                        f"not idempotent_inbox--{newest}.sql")
    c.check("provides/idempotent_inbox is the newest install script at that version", problems)
    required = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
    major = oldest_debian_major(root)
    problems = []
    if not isinstance(required, str) or not SEMVER.fullmatch(required):
        problems.append(f"prereqs/runtime/requires/PostgreSQL is {required!r}, not a minimum version")
    elif major is None or int(required.split(".")[0]) != major:
        problems.append(f"META.json requires PostgreSQL {required}, debian/pgversions starts at {major}")
    c.check("the PostgreSQL requirement is the oldest major debian/pgversions builds for",
            problems)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    c = Checker()
    try:
        with open(os.path.join(root, "META.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        c.check("META.json is valid JSON", [str(e)])
        return 1 if c.report() else 0
    c.check("META.json is valid JSON", [])
    check_spec(c, meta, root)
    if isinstance(meta, dict):
        check_tree(c, meta, root)
    return 1 if c.report() else 0


if __name__ == "__main__":
    sys.exit(main())
