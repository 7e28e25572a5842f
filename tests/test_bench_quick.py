"""bench.quick runs every benchmark: a module added under bench/ is either
in its list, run inside one that is, or named as no benchmark."""

from pathlib import Path

from bench import quick

BENCH = Path(quick.__file__).parent


def test_every_bench_module_is_run_by_bench_quick_or_named_as_no_benchmark() -> None:
    modules = {path.stem for path in BENCH.glob("*.py")}
    listed = set(quick.BENCHMARKS) | set(quick.INSIDE) | set(quick.HELPERS)
    assert modules - listed == set(), "add it to bench.quick.BENCHMARKS (or HELPERS)"
    assert listed - modules == set(), "bench.quick names a module that is not there"
    assert set(quick.BENCHMARKS).isdisjoint(quick.HELPERS)
    assert set(quick.INSIDE.values()) <= set(quick.BENCHMARKS)


def test_every_quick_run_is_a_quick_option_of_its_benchmark() -> None:
    for name, arguments in quick.BENCHMARKS.items():
        source = (BENCH / f"{name}.py").read_text()
        assert "--quick" in arguments, name
        assert '"--quick"' in source and '"--name"' in source, name
