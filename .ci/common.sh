# Shared by .ci/run and .ci/frameworks (sourced, not run): the interpreter, a clean copy of the
# checkout and a fresh virtualenv. The caller sets `repo`, `source_tree` (head | worktree) and
# defines `fail`.

# Sets `python` to an interpreter >= 3.11 ($PYTHON, else the first found).
pick_python() {
    python="${PYTHON:-}"
    if [[ -z "$python" ]]; then
        for candidate in python3.11 python3 python; do
            if command -v "$candidate" >/dev/null 2>&1; then python="$candidate"; break; fi
        done
    fi
    [[ -n "$python" ]] || fail "no python found; set PYTHON=/path/to/python3.11"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || fail "$python is $("$python" -V 2>&1); Python >= 3.11 is required"
}

# Copies the checkout (HEAD, or the working tree) into the empty folder $1.
copy_checkout() {
    local dest="$1" name="$2"
    mkdir "$dest"
    if ! git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Not a git checkout (e.g. an unpacked archive): copy everything except build leftovers.
        tar -C "$repo" --exclude=.git --exclude=__pycache__ --exclude='*.egg-info' \
            --exclude=./build --exclude=./dist -cf - . | tar -xf - -C "$dest"
    elif [[ "$source_tree" == head ]]; then
        git -C "$repo" archive --format=tar HEAD | tar -xf - -C "$dest"
        echo "$name: testing commit $(git -C "$repo" rev-parse --short HEAD)"
    else
        (
            cd "$repo"
            git ls-files -z --cached --others --exclude-standard \
                | while IFS= read -r -d '' f; do
                    # Skip files deleted in the working tree and build leftovers git does not
                    # ignore.
                    [[ -e "$f" ]] || continue
                    case "/$f" in */__pycache__/*|*.egg-info/*|/build/*|/dist/*) continue ;; esac
                    printf '%s\0' "$f"
                done \
                | tar --null -T - -cf - \
                | tar -xf - -C "$dest"
        )
        echo "$name: testing the working tree"
    fi
}

# Makes a fresh virtualenv at $1 and puts it first on PATH.
activate_fresh_venv() {
    local venv="$1"
    if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
        # Some distributions ship python without ensurepip: make the venv bare and let the
        # outer pip (>= 22.3 knows --python) install pip into it.
        rm -rf "$venv"
        "$python" -m venv --without-pip "$venv"
        "$python" -m pip --python "$venv/bin/python" install --quiet pip
    fi
    export VIRTUAL_ENV="$venv"
    export PATH="$venv/bin:$PATH"
    unset PYTHONPATH PYTHONHOME
    hash -r
    [[ "$(command -v python)" == "$venv/bin/python" ]] \
        || fail "virtualenv python is not first on PATH"
}
