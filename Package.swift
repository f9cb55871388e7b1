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
        .library(name: "WorkoutReport", targets: ["WorkoutReport"]),
        .executable(name: "workout", targets: ["WorkoutCLI"]),
        .executable(name: "watch-sim", targets: ["WatchSim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
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
            name: "WorkoutReplay", dependencies: ["WorkoutEngine", "WorkoutStore", "WorkoutSimulator", "WorkoutFormats"],
            swiftSettings: strict),
        // FIT, GPX and TCX interchange; Sources/WorkoutFormats/FIT needs only Foundation (fuzzing, benchmark).
        .target(name: "WorkoutFormats", dependencies: ["WorkoutModel", "WorkoutEngine"], swiftSettings: strict),
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
                "WorkoutReport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "WorkoutModelTests", dependencies: ["WorkoutModel"], swiftSettings: strict),
        .testTarget(name: "WorkoutEngineTests", dependencies: ["WorkoutEngine"], swiftSettings: strict),
        .testTarget(
            name: "WorkoutSensorsTests", dependencies: ["WorkoutSensors", "WorkoutEngine", "WorkoutModel"], swiftSettings: strict),
        .testTarget(
            name: "WorkoutStoreTests",
            dependencies: ["WorkoutStore", "WorkoutReplay", .product(name: "GRDB", package: "GRDB.swift")],
            // Fixtures/: a schema-1 store (gzip) read by MigrationTests through #filePath.
            exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(
            name: "WorkoutReplayTests",
            dependencies: ["WorkoutReplay", "WorkoutSimulator", "WorkoutStore", "WorkoutSensors"],
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutTransportTests", dependencies: ["WorkoutSensors", "CTerminalShims"], swiftSettings: strict),
        // Test support (not a product): a probe that runs libserialport's real code over a pseudo-terminal,
        // with modem lines emulated in its own process only (README, Development).
        .target(name: "CModemLineEmulation", path: "Tests/CModemLineEmulation"),
        .executableTarget(
            name: "SerialProbe", dependencies: ["WorkoutSensors", "CModemLineEmulation"], path: "Tests/SerialProbe",
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutFormatsTests",
            dependencies: ["WorkoutFormats", "WorkoutReplay", "WorkoutStore", "WorkoutSimulator"],
            swiftSettings: strict),
        .testTarget(
            name: "WorkoutReportTests",
            dependencies: ["WorkoutReport", "WorkoutReplay", "WorkoutStore", "WorkoutSimulator", "WorkoutFormats"],
            exclude: ["Snapshots"], swiftSettings: strict),
        .testTarget(
            name: "WorkoutCLITests",
            dependencies: ["WorkoutCLI", "WorkoutModel", "WorkoutStore", "WorkoutSensors", "WorkoutFormats"],
            swiftSettings: strict),
    ]
)
