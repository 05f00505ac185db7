#!/bin/sh
# Lists the files under a folder whose names match a pattern, one path a line.
#
# A script tool of synapse-mcp: find_files.tool.json passes the arguments on the command line,
#   find_files.sh FOLDER [--name PATTERN] [--depth LEVELS]
# and what it prints on stdout is the result. A non-zero exit is an error whose message quotes
# stderr.
set -eu
folder=$1
shift
name='*'
depth=3
while [ $# -gt 0 ]; do
  case $1 in
    --name) name=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
# The script runs in its group folder: a relative folder is taken from the home folder.
case $folder in
  /*) ;;
  "~") folder=$HOME ;;
  "~/"*) folder=$HOME/${folder#"~/"} ;;
  *) folder=$HOME/$folder ;;
esac
if [ ! -d "$folder" ]; then
  echo "$folder is not a folder" >&2
  exit 1
fi
find "$folder" -maxdepth "$depth" -type f -name "$name" | sort
