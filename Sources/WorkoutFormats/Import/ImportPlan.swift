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
        /// Heart beats of `hr` messages where a record read another sensor out of the water (not imported:
        /// the device's figures follow that reading there).
        case heartBeatsBesideOtherSensor
        /// No session message: the workout spans the records.
        case noSessions
        /// Bytes after the last FIT file that are not another FIT file.
        case trailingBytes
        /// The file is damaged (cut short, bad checksum, corrupt message): what precedes the damage
        /// was imported, nothing after it.
        case damagedFile
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
    /// The file's times are outside what the import was told to take (`ImportOptions.longestSpan`, `latestEnd`).
    case outsideLimits(String)

    public var description: String {
        switch self {
        case .outsideLimits(let detail): detail
        case .decoding(let error): error.description
        case .nothingToImport(let detail): "nothing to import: \(detail)"
        }
    }
}

/// One leg of the imported workout: a session of the file.
public struct ImportedLeg: Sendable, Hashable {
    /// Index of the session in `FITImportPlan.sessions` (the file's sessions in time order); nil
    /// when the file had none and the leg spans the records, or for the leg under way at a damaged
    /// file's damage (its session was never written).
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
    public var options: ImportOptions
    /// The file's sessions in time order (as the device wrote them: for comparison only).
    public var sessions: [FITSummary]
    public var configuration: WorkoutConfiguration
    public var builderOptions: BuilderOptions
    /// The ids the file would have without `ImportOptions.idSalt` (what an import made before the salt
    /// gave it: a duplicate of that is found by it).
    public var unsaltedIdentifiers: IdentifierSource
    public var start: Date
    public var end: Date
    public var legs: [ImportedLeg]
    /// Every step in time order (made whole: the replay itself takes the record steps one record at a time).
    public var steps: [TimedStep] {
        var all: [TimedStep] = []
        all.reserveCapacity(stepCount)
        var steps = orderedSteps()
        while let (key, step) = steps.next() { all.append(TimedStep(time: FITTime.date(key.time), step: step)) }
        return all
    }
    /// How many steps the replay applies.
    public var stepCount: Int { fixedSteps.count + recordStepCount }
    /// The steps other than the records' (legs, pauses, lengths, laps, heart beats), in key order.
    var fixedSteps: [(key: StepKey, step: ImportStep)]
    /// Makes the records' steps during the replay (nil: they are among `fixedSteps`).
    var recordSteps: RecordStepperBox?
    var recordStepCount: Int
    /// Heart rate after the end (for the heart-rate recovery).
    public var recoveryHeartRate: [QuantitySample]
    public var anomalies: [ImportAnomaly]
    /// The device that recorded the file (source of its samples).
    public var device: SourceDevice
    public var metadata: Metadata
    /// Samples and route points the plan feeds.
    public var sampleCount = 0
    public var routePointCount = 0

    /// The damage of a salvaged file (`FITDecodeOptions.salvage`): the import holds what precedes it.
    public var damage: FITError? { file.damage }

    /// Decodes `bytes` and plans their import.
    ///
    /// With `options.salvage` a damaged file imports up to its damage; when nothing before the
    /// damage can make a workout, the damage is the error (`ImportError.decoding`).
    public init(bytes: [UInt8], options: ImportOptions = ImportOptions()) throws(ImportError) {
        let file: FITFile
        do {
            file = try FITDecoder.decode(bytes, options: FITDecodeOptions(salvage: options.salvage))
        } catch {
            throw .decoding(error)
        }
        do {
            try self.init(file: file, options: options, seed: FITImportPlan.fnv1a(bytes))
        } catch {
            if let damage = file.damage, case .nothingToImport = error { throw .decoding(damage) }
            throw error
        }
    }

    /// Plans the import of a decoded file; `seed` makes the workout's ids reproducible.
    public init(file: FITFile, options: ImportOptions = ImportOptions(), seed: UInt64) throws(ImportError) {
        var planner = ImportPlanner(file: file, options: options)
        try planner.plan()
        self.file = file
        self.options = options
        sessions = planner.sessions
        configuration = planner.configuration
        let unsalted = seed ^ (options.autoSegment ? 0x5EED_0A17 : 0)
        unsaltedIdentifiers = .seeded(unsalted)
        var builderOptions = BuilderOptions(identifiers: .seeded(unsalted ^ options.idSalt))
        // Smart recording leaves records seconds apart, standing for the device's own once-a-second
        // values: a reading moves in a straight line to the next one within the hold cap.
        if Self.isSmartRecorded(file.records) {
            builderOptions.interpolation = .linear
            builderOptions.holdCap = Self.recordHoldCap
        }
        // Garmin's swim watches average a swim strap's stored heart rate (`hr` messages) over the
        // pool lengths swum (fenix 3: 103 bpm, its lengths' beats 102.7, with the rests 97.5), while
        // heart rate recorded live in the records counts over the timer, rests in (Forerunner 965:
        // 139 bpm, its records 139.3 over the timer, 143.7 over the lengths swum). Both write an
        // open-water SWOLF.
        let garmin = file.fileIDs.first?.manufacturer == FITProfile.Manufacturer.garmin
        builderOptions.averagesExcludeRests = garmin && !file.heartBeats.isEmpty
        builderOptions.openWaterSWOLF = garmin ? Self.openWaterSWOLF(of: file.fileIDs.first) : nil
        // Explicit legs: the file says where they change, the detector stays off.
        builderOptions.automaticTransitions.enabled = options.autoSegment
        builderOptions.legs = planner.legSequence
        self.builderOptions = builderOptions
        start = FITTime.date(planner.workoutStart)
        end = FITTime.date(planner.workoutEnd)
        if let longest = options.longestSpan, end.timeIntervalSince(start) > longest {
            throw .outsideLimits(
                "the file's workout runs from \(start) to \(end), longer than the \(Int(longest / 3_600)) hours a workout "
                    + "may last here")
        }
        if let latest = options.latestEnd, end > latest {
            throw .outsideLimits("the file's workout ends at \(end), after \(latest): check the device's clock")
        }
        legs = planner.legs
        fixedSteps = planner.steps.sorted { $0.key < $1.key }
        recordSteps = planner.recordStepper
        recordStepCount = planner.recordStepper == nil ? 0 : planner.recordStepCount
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
        if let damage = file.damage { metadata[ImportMetadataKey.damage] = .string(damage.description) }
        self.metadata = metadata
    }

    /// Every step in time order, the records' made as the iterator reaches them (a replay that holds only
    /// the step it applies).
    public func makeStepIterator() -> AnyIterator<TimedStep> {
        var steps = orderedSteps()
        return AnyIterator { steps.next().map { TimedStep(time: FITTime.date($0.key.time), step: $0.step) } }
    }

    /// Every step in key order: the fixed steps merged with the records' as they are made.
    func orderedSteps() -> OrderedSteps {
        OrderedSteps(fixed: fixedSteps, records: recordSteps?.stepper.makeIterator())
    }

    /// The merge of the fixed steps and the record steps (each in key order).
    struct OrderedSteps: IteratorProtocol {
        let fixed: [(key: StepKey, step: ImportStep)]
        var records: RecordStepper.Iterator?
        var fixedIndex = 0
        var pending: (key: StepKey, step: ImportStep)?

        init(fixed: [(key: StepKey, step: ImportStep)], records: RecordStepper.Iterator?) {
            self.fixed = fixed
            self.records = records
            pending = self.records?.next()
        }

        mutating func next() -> (key: StepKey, step: ImportStep)? {
            if let record = pending, fixedIndex == fixed.count || record.key < fixed[fixedIndex].key {
                pending = records?.next()
                return record
            }
            guard fixedIndex < fixed.count else { return nil }
            defer { fixedIndex += 1 }
            return fixed[fixedIndex]
        }
    }

    /// The open-water SWOLF the device writes: strokes per 25 m + 1 on Garmin's 2022 generation
    /// (Forerunner 255; product numbers from 3900, where the Forerunner 255/955, fenix 7 and epix 2
    /// begin), else (seconds + strokes) per 25 m (735XT, 920XT, 945, fenix 5X). A regional variant
    /// counts as its model (`fr945_lte_asia`, 3978, is a Forerunner 945 LTE, 3652).
    static func openWaterSWOLF(of id: FITFileID?) -> OpenWaterSWOLF {
        guard id?.manufacturer == FITProfile.Manufacturer.garmin, let product = id?.product,
            GarminProduct.model(product) >= 3900
        else {
            return .secondsAndStrokesPer25m
        }
        return .strokesPer25mPlusOne
    }

    /// Whether the records are smart-recorded: the median step between consecutive record times
    /// is over 1.5 s (every-second recording steps 1 s).
    static func isSmartRecorded(_ records: [FITRecord]) -> Bool {
        var times = records.compactMap(\.timestamp)
        guard times.count > 2 else { return false }
        times.sort()
        var steps: [UInt32] = []
        steps.reserveCapacity(times.count)
        for index in times.indices.dropFirst() where times[index] > times[index - 1] {
            steps.append(times[index] - times[index - 1])
        }
        guard !steps.isEmpty else { return false }
        let middle = steps.count / 2
        let median = steps.sorted()[middle]
        return median > 1
    }

    /// How long a smart-recorded reading holds (or leads in a straight line to the next) at most:
    /// smart recording leaves records up to about 15 s apart; a longer gap is a dropout.
    public static let recordHoldCap: TimeInterval = 30

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
    /// Present on a workout imported from a damaged file: the damage (byte offset and what it is);
    /// the workout holds what precedes it.
    public static let damage = "ImportDamage"
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
