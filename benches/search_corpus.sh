#!/usr/bin/env bash
# Assembles the corpus that `examples/search_quality.rs` measures skill search on: the skills of
# three public skill repositories (anthropics/skills, obra/superpowers,
# K-Dense-AI/claude-scientific-skills; 165 skills) and the skills bundled with synapse-mcp, each
# repository in its own root, in that order (earlier roots win a name collision, so the four
# document skills K-Dense-AI repeats come from anthropics/skills).
#
# No third-party skill text is kept in this repository: give the script git directories of those
# repositories (a `git clone --bare` or any snapshot with the history) and a folder to write into.
# Each repository's folders that hold a SKILL.md are extracted from its HEAD with `git archive`.
#
# Usage: benches/search_corpus.sh OUT ANTHROPICS_SKILLS_GIT SUPERPOWERS_GIT SCIENTIFIC_SKILLS_GIT
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -ne 4 ]]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
out=$1
shift
rm -rf "$out"
mkdir -p "$out"
number=1
for git_dir in "$@"; do
  name=$(basename "$(dirname "$git_dir")")
  [[ $name == . || $name == / ]] && name=$(basename "$git_dir")
  root="$out/$number-$(basename "$name" .git)"
  mkdir -p "$root"
  # Skill folders only: the repositories' templates and tooling are not skills.
  mapfile -t folders < <(git -C "$git_dir" ls-tree -r --name-only HEAD |
    grep '/SKILL\.md$' | grep -v '^template/' | xargs -n1 dirname)
  git -C "$git_dir" archive HEAD -- "${folders[@]}" | tar -x -C "$root"
  echo "$root: ${#folders[@]} skills from $(git -C "$git_dir" rev-parse --short HEAD)"
  number=$((number + 1))
done
cp -r skills "$out/$number-bundled"
echo "$out/$number-bundled: $(find skills -name SKILL.md | wc -l) skills bundled with synapse-mcp"
