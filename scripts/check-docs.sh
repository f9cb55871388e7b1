#!/usr/bin/env bash
# Builds the DocC documentation of the catalogued products (WorkoutModel, WorkoutEngine, WorkoutStore) from
# the debug build `swift build` has already made, warnings as errors: a symbol or article link that no longer
# resolves, or any other DocC warning, fails it (scripts/test.sh runs it after its build; CONTRIBUTING.md,
# "The test command and its passes").
#
# What `swift package generate-documentation --target … --warnings-as-errors` does, without its seven package
# builds (its snippet tool, each target, each symbol graph, each planning the whole package: about 65 s of a
# 78 s run on the loaded 2-core machine): the symbol graphs are extracted from the built modules with the compiler's own flags
# (the C module maps a module imports), with the plugin's options (public symbols, synthesized members,
# extension blocks, no inherited doc comments: `-skip-inherited-docs`, as SwiftPM extracts them for the plugin),
# then `docc convert` runs on each catalog as the plugin runs it.
# With no debug build, it falls back to the plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(WorkoutModel WorkoutEngine WorkoutStore)
modules=.build/debug/Modules
if [ ! -f .build/debug.yaml ] || [ ! -d "$modules" ]; then
    exec swift package generate-documentation --target WorkoutModel --target WorkoutEngine --target WorkoutStore \
        --warnings-as-errors
fi
bin="$(dirname "$(readlink -f "$(command -v swift)")")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for target in "${targets[@]}"; do
    [ -f "$modules/$target.swiftmodule" ] || { echo "check-docs: $target is not built: run swift build first" >&2; exit 1; }
    # The target and the -Xcc flags (C module maps) of the module's own compilation.
    flags=$(python3 - "$target" <<'PY'
import json, re, sys
target = sys.argv[1]
for block in open(".build/debug.yaml").read().split("\n  \"")[1:]:
    if f'"-module-name","{target}"' not in block:
        continue
    args = json.loads(re.search(r"args: (\[.*\])", block).group(1))
    out = ["-target", args[args.index("-target") + 1]]
    for index, arg in enumerate(args[:-1]):
        if arg == "-Xcc" and args[index + 1].startswith("-fmodule-map-file="):
            out += ["-Xcc", args[index + 1]]
    print("\n".join(out))
    break
else:
    sys.exit(f"check-docs: no compilation of {target} in .build/debug.yaml: run swift build first")
PY
    )
    mapfile -t flags <<<"$flags"
    mkdir -p "$work/$target"
    "$bin/swift-symbolgraph-extract" -module-name "$target" -I "$modules" "${flags[@]}" \
        -minimum-access-level public -emit-extension-block-symbols -skip-inherited-docs -output-dir "$work/$target"
    "$bin/docc" convert "Sources/$target/Documentation.docc" --fallback-display-name "$target" \
        --fallback-bundle-identifier "$target" --additional-symbol-graph-dir "$work/$target" \
        --output-path "$work/$target.doccarchive" --warnings-as-errors
done
