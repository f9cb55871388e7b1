// swift-tools-version: 6.2
// Performance benchmarks (package-benchmark). Run from this folder:
//   swift package benchmark --target Ingest
//   swift package benchmark --target Store
//   swift package benchmark --target Decoders
// Figures: ../docs/performance.md (generated from Results/figures.json); how to run: ../CONTRIBUTING.md.
import PackageDescription

let package = Package(
    name: "WorkoutBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "workout-engine", path: "../"),
        // Only the MallocInterposer trait: the default set also pulls in a runtime interposer that
        // the local package mirror does not carry.
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        // For the raw-SQLite baseline of the Store benchmarks (the store itself already depends on it).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "Ingest",
            dependencies: [
                .product(name: "WorkoutEngine", package: "workout-engine"),
                .product(name: "WorkoutModel", package: "workout-engine"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Ingest",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Store",
            dependencies: [
                .product(name: "WorkoutStore", package: "workout-engine"),
                .product(name: "WorkoutEngine", package: "workout-engine"),
                .product(name: "WorkoutModel", package: "workout-engine"),
                .product(name: "WorkoutSimulator", package: "workout-engine"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Store",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Decoders",
            dependencies: [
                .product(name: "WorkoutSensors", package: "workout-engine"),
                .product(name: "WorkoutSimulator", package: "workout-engine"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Decoders",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
