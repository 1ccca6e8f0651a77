"""What every family of posenc uses: memory accounting, the names of layouts, marked defaults, the
compile guard, the bounded caches and the optional imports (no public entry points here)."""
