// swift-tools-version: 6.2
import PackageDescription

/// Settings shared by every target of ours: Swift 6 language mode comes from the tools
/// version; warnings are errors so the tree stays at zero warnings.
let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "workout-engine",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "WorkoutModel", targets: ["WorkoutModel"]),
        .library(name: "WorkoutEngine", targets: ["WorkoutEngine"]),
        .library(name: "WorkoutStore", targets: ["WorkoutStore"]),
        .library(name: "WorkoutSensors", targets: ["WorkoutSensors"]),
        .library(name: "WorkoutSimulator", targets: ["WorkoutSimulator"]),
        .library(name: "WorkoutReplay", targets: ["WorkoutReplay"]),
        .library(name: "WorkoutFormats", targets: ["WorkoutFormats"]),
        .library(name: "WorkoutImport", targets: ["WorkoutImport"]),
        .library(name: "WorkoutReport", targets: ["WorkoutReport"]),
        .executable(name: "workout", targets: ["WorkoutCLI"]),
        .executable(name: "watch-sim", targets: ["WatchSim"]),
        .executable(name: "workout-scale-bench", targets: ["ScaleBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // The server (WorkoutServer): HTTP, lifecycle, logs, metrics with a Prometheus endpoint, token hashes.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // `swift package generate-documentation` (DocC catalogs under Sources/*/Documentation.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // Apple Health export.zip (WorkoutImport only).
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
    ],
    targets: [
        .target(name: "WorkoutModel", swiftSettings: strict),
        .target(name: "WorkoutEngine", dependencies: ["WorkoutModel"], swiftSettings: strict),
        .target(
            name: "WorkoutStore",
            dependencies: ["WorkoutEngine", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        .target(name: "CTerminalShims"),
        .systemLibrary(name: "CSerialPort", pkgConfig: "libserialport", providers: [.apt(["libserialport-dev"])]),
        .target(
            name: "WorkoutSensors", dependencies: ["WorkoutEngine", "CTerminalShims", "CSerialPort"],
            swiftSettings: strict),
        .target(
            name: "WorkoutSimulator", dependencies: ["WorkoutModel", "WorkoutSensors"], path: "Simulators/WorkoutSimulator",
            resources: [.copy("Scenarios")], swiftSettings: strict),
        .target(
            name: "WorkoutReplay", dependencies: ["WorkoutEngine", "WorkoutStore", "WorkoutSimulator"],
            swiftSettings: strict),
        // File import (FIT, Apple Health): a reader per format, one path into the live engine and the store.
        .target(
            name: "WorkoutImport",
            dependencies: [
                "WorkoutModel", "WorkoutEngine", "WorkoutStore", "WorkoutFormats",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            swiftSettings: strict),
        // FIT, GPX and TCX interchange; Sources/WorkoutFormats/FIT needs only Foundation (fuzzing, benchmark).
        .target(name: "WorkoutFormats", dependencies: ["WorkoutModel", "WorkoutEngine"], swiftSettings: strict),
        // The PostgreSQL backend of WorkoutStore (postgres-nio stays inside this target).
        .target(
            name: "WorkoutStorePostgres",
            dependencies: [
                "WorkoutStore", "WorkoutEngine",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // `workout serve`: athletes, tokens, uploads, queries and live sessions over HTTP (README "Server").
        .target(
            name: "WorkoutServer",
            dependencies: [
                "WorkoutEngine", "WorkoutStore", "WorkoutStorePostgres", "WorkoutImport", "WorkoutFormats", "WorkoutReport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            swiftSettings: strict),
        // `workout record --upload`: streams a journaled recording to a server's live session (Foundation's URLSession).
        .target(name: "WorkoutUpload", dependencies: ["WorkoutEngine", "WorkoutModel"], swiftSettings: strict),
        // scripts/scale-bench.sh: times the activity query on a generated PostgreSQL store (not shipped).
        .executableTarget(
            name: "ScaleBench", dependencies: ["WorkoutStorePostgres", "WorkoutStore", "WorkoutModel"],
            path: "Tools/ScaleBench", swiftSettings: strict),
        // The HTML report of a workout (also served by `workout serve`): fed by the store's public API only.
        .target(
            name: "WorkoutReport", dependencies: ["WorkoutModel", "WorkoutEngine", "WorkoutStore", "WorkoutFormats"],
            swiftSettings: strict),
        .executableTarget(
            name: "WatchSim",
            dependencies: [
                "WorkoutSimulator", "WorkoutSensors",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Simulators/WatchSim", swiftSettings: strict),
        .executableTarget(
            name: "WorkoutCLI",
            dependencies: [
                "WorkoutEngine",
                "WorkoutStore",
                "WorkoutSimulator",
                "WorkoutReplay",
                "WorkoutSensors",
                "WorkoutFormats",
                "WorkoutImport",
                "WorkoutServer",
                "WorkoutReport",
                "WorkoutUpload",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Helpers every test target shares: the test PostgreSQL, shared recordings, backends, temporary
        // folders, built executables, deadline waits (not a product).
        .target(name: "WorkoutTestSupport", path: "Tests/WorkoutTestSupport", swiftSettings: strict),
        // Test support for the store's two test targets: one pool on the test PostgreSQL, a fresh store per backend.
        .target(
            name: "StoreTestSupport", dependencies: ["WorkoutStore", "WorkoutStorePostgres", "WorkoutTestSupport"],
            path: "Tests/StoreTestSupport", swiftSettings: strict),
        .testTarget(name: "WorkoutModelTests", dependencies: ["WorkoutModel"], swiftSettings: strict),
        .testTarget(
            name: "WorkoutEngineTests", dependencies: ["WorkoutEngine", "WorkoutTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "WorkoutSensorsTests",
            dependencies: ["WorkoutSensors", "WorkoutEngine", "WorkoutModel", "WorkoutTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutStoreTests",
            dependencies: [
                "WorkoutStore", "WorkoutStorePostgres", "WorkoutReplay", "WorkoutImport", "WorkoutFormats",
                .product(name: "GRDB", package: "GRDB.swift"), "WorkoutTestSupport",
                "StoreTestSupport",
            ],
            // Fixtures/: a schema-1 store (gzip) read by MigrationTests through #filePath.
            exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(
            name: "WorkoutReplayTests",
            dependencies: ["WorkoutReplay", "WorkoutSimulator", "WorkoutStore", "WorkoutSensors", "WorkoutTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutTransportTests",
            dependencies: ["WorkoutSensors", "CTerminalShims", "SensorTestSupport", "WorkoutTestSupport"],
            swiftSettings: strict),
        // Test support (not a product): device emulations behind pseudo-terminals that more than one test target uses.
        .target(name: "SensorTestSupport", dependencies: ["WorkoutSensors"], path: "Tests/SensorTestSupport", swiftSettings: strict),
        // Test support (not a product): a probe that runs libserialport's real code over a pseudo-terminal,
        // with modem lines emulated in its own process only (README, Development).
        .target(name: "CModemLineEmulation", path: "Tests/CModemLineEmulation"),
        .executableTarget(
            name: "SerialProbe", dependencies: ["WorkoutSensors", "CModemLineEmulation"], path: "Tests/SerialProbe",
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutFormatsTests",
            dependencies: ["WorkoutFormats", "WorkoutImport", "WorkoutReplay", "WorkoutStore", "WorkoutSimulator", "WorkoutTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutStorePostgresTests",
            dependencies: [
                "WorkoutStorePostgres", "WorkoutStore", "WorkoutReplay", "WorkoutImport", "WorkoutEngine", "WorkoutModel",
                .product(name: "NIOPosix", package: "swift-nio"), "WorkoutTestSupport", "StoreTestSupport",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutServerTests",
            dependencies: [
                "WorkoutServer", "WorkoutStore", "WorkoutModel", "WorkoutUpload", "WorkoutEngine", "WorkoutFormats",
                "WorkoutTestSupport", "WorkoutStorePostgres",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutReportTests",
            dependencies: [
                "WorkoutReport", "WorkoutReplay", "WorkoutImport", "WorkoutStore", "WorkoutSimulator", "WorkoutFormats", "WorkoutTestSupport",
            ],
            exclude: ["Snapshots"], swiftSettings: strict),
        .testTarget(
            name: "WorkoutUploadTests",
            dependencies: ["WorkoutUpload", "WorkoutEngine", "WorkoutModel", "WorkoutTestSupport"],
            swiftSettings: strict),
        // Every relative link of the README, docs/, CONTRIBUTING, CHANGELOG and the DocC catalogs resolves.
        .testTarget(name: "DocumentationTests", swiftSettings: strict),
        .testTarget(
            name: "WorkoutCLITests",
            dependencies: [
                "WorkoutCLI", "WorkoutModel", "WorkoutStore", "WorkoutSensors", "WorkoutFormats", "WorkoutImport", "SensorTestSupport",
                "WorkoutTestSupport",
            ],
            swiftSettings: strict),
    ]
)
