import Foundation
import WorkoutEngine
import WorkoutModel

/// Something odd in a file that the import worked around; reported to the user, never fatal.
public struct ImportAnomaly: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Records whose timestamp is earlier than the record before them (sorted into time order).
        case timestampsBackward
        /// Records with the same timestamp as the record before them.
        case duplicateTimestamps
        /// A cumulative distance or cycle count went back to (near) zero: counted as a restart.
        case counterRestarted
        /// A session's start_time + total_elapsed_time contradicts the sessions around it or its laps.
        case sessionContradiction
        /// Sessions that overlap the one before them (moved to start at its end).
        case sessionsOverlap
        /// Pool lengths that overlap the length before them by more than a second (laid end to end).
        case lengthsOverlap
        /// Lengths or laps outside the sessions (dropped) or cut at a session's end.
        case eventsClipped
        /// Records outside every session (before the first or after the last, beyond the recovery).
        case recordsOutsideSessions
        /// Records without a timestamp (cannot be placed; dropped).
        case recordsWithoutTimestamp
        /// Heart beats of `hr` messages with no time reference (dropped).
        case unanchoredHeartBeats
        /// No session message: the workout spans the records.
        case noSessions
        /// Bytes after the last FIT file that are not another FIT file.
        case trailingBytes
    }

    public var kind: Kind
    public var detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { detail }
}

/// Why a file cannot be imported.
public enum ImportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not a valid FIT file.
    case decoding(FITError)
    /// The file decodes but holds nothing to build a workout from.
    case nothingToImport(String)
    /// `--auto-segment` asks for swim-bike-run detection on a file that is not a triathlon.
    case notATriathlon(sports: [String])

    public var description: String {
        switch self {
        case .decoding(let error): error.description
        case .nothingToImport(let detail): "nothing to import: \(detail)"
        case .notATriathlon(let sports):
            "automatic segmentation needs a swim-bike-run file (swimming, transition, cycling, transition, running); "
                + "this file's sessions are \(sports.joined(separator: ", ")); import it without --auto-segment"
        }
    }
}

/// How a FIT file is imported.
public struct FITImportOptions: Sendable, Hashable {
    /// Let the session's automatic transition detection find the legs of a triathlon instead of
    /// changing legs at the file's session boundaries.
    public var autoSegment: Bool

    public init(autoSegment: Bool = false) {
        self.autoSegment = autoSegment
    }
}

/// One leg of the imported workout: a session of the file.
public struct ImportedLeg: Sendable, Hashable {
    /// Index of the session in `FITImportPlan.sessions` (the file's sessions in time order); nil
    /// when the file had none and the leg spans the records.
    public var session: Int?
    public var sport: UInt8?
    public var subSport: UInt8?
    public var configuration: WorkoutConfiguration
    public var start: Date
    public var end: Date
    /// A pool swim: distance and strokes come from the lengths, the timer runs only through them.
    public var isPool: Bool
}

/// One input to the session, at the instant a live device would have delivered it.
public enum ImportStep: Sendable, Hashable {
    /// Begin leg `index` of `FITImportPlan.legs` (ending the current one there).
    case beginLeg(Int)
    /// End leg `index` (the next one begins later: a gap between the file's sessions).
    case endLeg(Int)
    /// The timer stopped (`motion`: an auto-pause) or started again.
    case pause(motion: Bool)
    case resume(motion: Bool)
    case samples([QuantitySample])
    case events([WorkoutEvent])
    case route([RoutePoint])
}

/// A step and when it happens.
public struct TimedStep: Sendable, Hashable {
    public var time: Date
    public var step: ImportStep
}

/// A decoded FIT file turned into the inputs of one live session: what to configure, and every
/// state change, sample, event and route point in time order.
///
/// Nothing of the device's summaries goes in: sessions give only the legs' boundaries (or nothing,
/// with automatic segmentation), laps and lengths are events, records and `hr` messages are samples.
/// The engine recomputes every statistic.
public struct FITImportPlan: Sendable {
    public var file: FITFile
    public var options: FITImportOptions
    /// The file's sessions in time order (as the device wrote them: for comparison only).
    public var sessions: [FITSummary]
    public var configuration: WorkoutConfiguration
    public var builderOptions: BuilderOptions
    public var start: Date
    public var end: Date
    public var legs: [ImportedLeg]
    public var steps: [TimedStep]
    /// Heart rate after the end (for the heart-rate recovery).
    public var recoveryHeartRate: [QuantitySample]
    public var anomalies: [ImportAnomaly]
    /// The device that recorded the file (source of its samples).
    public var device: SourceDevice
    public var metadata: Metadata
    /// Samples and route points the plan feeds.
    public var sampleCount = 0
    public var routePointCount = 0

    /// Decodes `bytes` and plans their import.
    public init(bytes: [UInt8], options: FITImportOptions = FITImportOptions()) throws(ImportError) {
        let file: FITFile
        do {
            file = try FITDecoder.decode(bytes)
        } catch {
            throw .decoding(error)
        }
        try self.init(file: file, options: options, seed: FITImportPlan.fnv1a(bytes))
    }

    /// Plans the import of a decoded file; `seed` makes the workout's ids reproducible.
    public init(file: FITFile, options: FITImportOptions = FITImportOptions(), seed: UInt64) throws(ImportError) {
        var planner = ImportPlanner(file: file, options: options)
        try planner.plan()
        self.file = file
        self.options = options
        sessions = planner.sessions
        configuration = planner.configuration
        var builderOptions = BuilderOptions(identifiers: .seeded(seed ^ (options.autoSegment ? 0x5EED_0A17 : 0)))
        // Explicit legs: the file says where they change, the detector stays off.
        builderOptions.automaticTransitions.enabled = options.autoSegment
        self.builderOptions = builderOptions
        start = FITTime.date(planner.workoutStart)
        end = FITTime.date(planner.workoutEnd)
        legs = planner.legs
        steps = planner.steps.sorted { $0.key < $1.key }.map {
            TimedStep(time: FITTime.date($0.key.time), step: $0.step)
        }
        recoveryHeartRate = planner.recovery
        anomalies = planner.anomalies
        device = planner.device
        sampleCount = planner.sampleCount
        routePointCount = planner.routePointCount
        var metadata: Metadata = [
            ImportMetadataKey.format: .string("FIT"), ImportMetadataKey.device: .string(device.name),
        ]
        if let product = planner.file.fileIDs.first?.product {
            metadata[ImportMetadataKey.product] = .int(Int(product))
        }
        if options.autoSegment { metadata[ImportMetadataKey.segmentation] = .string("automatic") }
        self.metadata = metadata
    }

    /// FNV-1a of the file's bytes: the seed of the workout's ids (the same file gives the same workout).
    public static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}

/// Metadata keys an import writes on the workout.
public enum ImportMetadataKey {
    /// The file format the workout came from (`FIT`).
    public static let format = "ImportFormat"
    /// The recording device: maker and model (`Garmin Forerunner 920XT`; Garmin's product numbers are
    /// named from the FIT profile).
    public static let device = "ImportDevice"
    /// The device's product number as the file gives it (`file_id.product`, an int: 1765).
    public static let product = "ImportProduct"
    /// The imported file's name.
    public static let fileName = "ImportFileName"
    /// `automatic` when the legs were found by the engine's transition detection.
    public static let segmentation = "ImportSegmentation"
}

/// The steps' sort key: time, then state changes before data at the same instant, then file order.
struct StepKey: Comparable, Hashable {
    var time: Double
    var rank: Int
    var sequence: Int

    static func < (lhs: StepKey, rhs: StepKey) -> Bool {
        if lhs.time != rhs.time { return lhs.time < rhs.time }
        if lhs.rank != rhs.rank { return lhs.rank < rhs.rank }
        return lhs.sequence < rhs.sequence
    }
}
