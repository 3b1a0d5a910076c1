# Sourced by the scripts that publish measurements (publish-results.sh, measure-engine-cpu.sh):
# published figures come from a clean tree, so leave unless everything outside results/ is committed.
if [[ -n "$(git status --porcelain -- . ':(exclude)results')" ]]; then
    echo "error: the tree has uncommitted changes; published figures come from a clean tree (commit or stash first)" >&2
    exit 2
fi
