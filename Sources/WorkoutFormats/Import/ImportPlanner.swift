import Foundation
import WorkoutEngine
import WorkoutModel

/// Works out a `FITImportPlan`: legs from sessions, pauses from timer events (and pool lengths),
/// samples from records and `hr` messages, lap events from lengths and laps. Times are FIT seconds.
struct ImportPlanner {
    let file: FITFile
    let options: ImportOptions
    var sessions: [FITSummary] = []
    var configuration = WorkoutConfiguration(activityType: .other)
    var workoutStart = 0.0
    var workoutEnd = 0.0
    var legs: [ImportedLeg] = []
    var legStarts: [Double] = []
    var legEnds: [Double] = []
    /// Per leg, where its share of the records' cumulative counters begins (`planCounterStarts`).
    var counterStarts: [Double] = []
    var poolLengths: [Double?] = []
    /// Per pool leg: its lengths as laid (start, end), in time order.
    var poolLengthSpans: [Int: [(start: Double, end: Double)]] = [:]
    var steps: [(key: StepKey, step: ImportStep)] = []
    var recovery: [QuantitySample] = []
    /// The timer's stopped spans (pauses and motion pauses, merged), in time order.
    var pausedSpans: [(start: Double, end: Double)] = []
    var anomalies: [ImportAnomaly] = []
    let device: SourceDevice
    var sequence = 0
    var sampleCount = 0
    var routePointCount = 0
    var recordsBefore = 0
    var recordsAfter = 0
    /// The record pass's running state: the cumulative counters and the previous record's time.
    var recordPass = RecordPass()
    /// While set, `add` numbers steps without keeping them (the planning pass over the records, whose steps the
    /// replay makes again one record at a time: `RecordSteps`).
    var countsStepsOnly = false
    /// The planning pass's record steps: how many, and whether their keys came in order (else they are kept).
    var recordStepCount = 0
    var recordStepsInOrder = true
    var lastRecordKey: StepKey?
    /// The planner as the record pass begins (for `RecordSteps`), and the records in time order.
    var recordStepper: RecordStepperBox?
    /// The planning pass's record steps while they fit (`recordsHeldWhole`, `recordStepsHeldWhole`; nil once they
    /// do not): a small file is planned once and its steps held, as before the replay made them; only a larger one
    /// pays for planning its records a second time during the replay.
    var heldRecordSteps: [(key: StepKey, step: ImportStep)]?
    var heldRecordBytes = 0

    /// The strap's stored beats' times (`hr` messages), sorted: what the record pass merges the records' heart rate
    /// with (set before the record pass begins).
    var recordBeatTimes: [Double] = []
    /// Records whose own heart-rate reading stands beside the strap's beats (another sensor, out of the water:
    /// `planHeartRateSources`), by time, and where each holds (to the next record with heart rate) with its
    /// reading, and whether the strap's beats take over there.
    var otherSensorRecords: Set<Double> = []
    var otherSensorSpans: [(start: Double, end: Double, value: Double, strapFollows: Bool)] = []
    /// Whether the record pass takes a swim's strokes from the stroke rate in `cadence` (a leg counts strokes and no
    /// record carries `total_cycles`; set before the record pass begins).
    var strokesFromCadence = false
    /// Automatic segmentation's paddled stretches (`paddleSpans`), in time order: their records are a boat's (set
    /// before the record pass begins).
    var paddledSpans: [(start: Double, end: Double)] = []

    /// The state the record pass carries from one record to the next.
    struct RecordPass {
        var distance = CounterState(name: "distance", unit: " m")
        var cycles = CounterState(name: "cycle count", unit: "")
        /// The previous record's time as the import took it (a record just after a session's end at the end).
        var previousRecord: Double?
        /// The previous record's own timestamp (where its heart-rate interval ends).
        var previousRecordTime: Double?
        /// The first of `recordBeatTimes` after the previous record's interval began.
        var nextBeat = 0
        /// Whether the swim opening the file goes on (automatic segmentation's stroke-rate rule).
        var swim = OpeningSwim()
        /// Whether the last record whose metres per cadence cycle were unambiguous was on foot (`ownTypes`).
        var onFoot: Bool?
        /// The first of `paddledSpans` not ended before the previous record.
        var nextPaddledSpan = 0
    }

    /// Rank of steps at the same instant: leg ends, leg starts, pauses, then data.
    enum Rank: Int { case endLeg = 0, beginLeg, pause, data }

    init(file: FITFile, options: ImportOptions) {
        self.file = file
        self.options = options
        let id = file.fileIDs.first
        let manufacturer: String? =
            id?.manufacturer.map { FITProfile.Manufacturer.name($0) ?? "manufacturer \($0)" }
        // Garmin's product numbers have names in the FIT profile (1765: Forerunner 920XT).
        let profileModel =
            id?.manufacturer == FITProfile.Manufacturer.garmin ? id?.product.flatMap(GarminProduct.displayName) : nil
        let model = id?.productName ?? profileModel ?? id?.product.map { "product \($0)" }
        let name = [manufacturer, model].compactMap { $0 }.joined(separator: " ")
        let serial = id?.serialNumber.map { String($0) }
        device = SourceDevice(
            name: name.isEmpty ? "FIT device" : name, manufacturer: manufacturer, model: model, identifier: serial)
    }

    mutating func plan() throws(ImportError) {
        let records = sortedRecords()
        try planLegs(records)
        try planConfiguration(records)
        planLegSteps()
        planLengths()
        planPauses(records)
        planCounterStarts(records)
        // What the record pass needs of all the records and beats, worked out once before it begins (the
        // counting pass and the replay's stepper both start from here).
        recordBeatTimes = file.heartBeats.map(\.time).sorted()
        planHeartRateSources(records)
        if typesRecordsByThemselves { paddledSpans = Self.paddleSpans(records) }
        strokesFromCadence =
            (typesRecordsByThemselves || legs.indices.contains { types($0)?.strokes == true })
            && !records.contains { $0.record.totalCycles != nil }
        // The record steps are most of a large file's steps (a sample batch and a route point a record): they are
        // counted here, not kept, and made again one record at a time as the replay reaches them (`RecordSteps`),
        // so that an import holds the decoded records, not every sample at once. Their numbers (sequences) are
        // the same both times, so the replay's order is the one sorting them all would give.
        // Only a large file is made so (more than `recordsHeldWhole` records, or steps over `recordStepsHeldWhole`
        // bytes): a smaller one's steps are held from this pass, planned once (planning every record twice made an
        // upload of the shared files cost 12 % more instructions: docs/live-load.md).
        heldRecordSteps = records.count <= Self.recordsHeldWhole ? [] : nil
        var stepper = self
        stepper.steps = []
        countsStepsOnly = true
        planRecords(records)
        countsStepsOnly = false
        if let held = heldRecordSteps {
            steps += held
            heldRecordSteps = nil
        } else if recordStepsInOrder {
            recordStepper = RecordStepperBox(RecordStepper(planner: stepper, records: records))
        } else {
            // Out of order (not seen in files): the steps are kept, as they always were.
            for (time, record) in records { stepper.planRecord(at: time, record) }
            steps += stepper.steps
        }
        planHeartBeats()
        planLaps()
        if recordsBefore + recordsAfter > 0 {
            anomalies.append(
                ImportAnomaly(
                    .recordsOutsideSessions,
                    "\(plural(recordsBefore, "record")) before the first session and \(recordsAfter) after the last "
                        + "(beyond the heart-rate recovery window) were not imported"))
        }
        if let damage = file.damage {
            anomalies.append(
                ImportAnomaly(
                    .damagedFile,
                    "the file is damaged, \(damage); the \(plural(file.records.count, "record")) "
                        + "and other complete messages before it were imported, nothing after it"))
        }
        if file.trailingBytes > 0 {
            anomalies.append(
                ImportAnomaly(.trailingBytes, "\(file.trailingBytes) bytes after the last FIT file were ignored"))
        }
        if file.unanchoredHeartBeats > 0 {
            anomalies.append(
                ImportAnomaly(
                    .unanchoredHeartBeats,
                    "\(plural(file.unanchoredHeartBeats, "heart beat")) of hr messages came before any hr message with a "
                        + "timestamp and could not be placed"))
        }
    }

    mutating func add(_ step: ImportStep, at time: Double, rank: Rank) {
        sequence += 1
        let key = StepKey(time: time, rank: rank.rawValue, sequence: sequence)
        if countsStepsOnly {
            recordStepCount += 1
            if let last = lastRecordKey, key < last { recordStepsInOrder = false }
            lastRecordKey = key
            if heldRecordSteps != nil {
                heldRecordBytes += Self.footprint(of: step)
                if heldRecordBytes > Self.recordStepsHeldWhole {
                    heldRecordSteps = nil
                } else {
                    heldRecordSteps?.append((key, step))
                }
            }
            return
        }
        steps.append((key, step))
    }

    /// The most records of a file whose record steps an import holds whole (five and a half hours recorded every
    /// second), and the most bytes those steps may take (16 MiB: they are dropped past it); a larger file has its
    /// record steps made one record at a time as the replay reaches them, at the cost of planning its records twice.
    static let recordsHeldWhole = 20_000
    static let recordStepsHeldWhole = 16 << 20

    /// About the bytes `step` holds once kept in the steps (its entry and its arrays' elements).
    static func footprint(of step: ImportStep) -> Int {
        let entry = MemoryLayout<(key: StepKey, step: ImportStep)>.stride
        // An array's storage: its header (two words and the allocation's own) and its elements.
        let header = 48
        switch step {
        case .samples(let samples): return entry + header + samples.capacity * MemoryLayout<QuantitySample>.stride
        case .route(let points): return entry + header + points.capacity * MemoryLayout<RoutePoint>.stride
        case .events(let events): return entry + header + events.capacity * MemoryLayout<WorkoutEvent>.stride
        case .beginLeg, .endLeg, .pause, .resume: return entry
        }
    }

    // MARK: records in time order

    mutating func sortedRecords() -> SortedRecords {
        var timed: [(time: UInt32, index: Int32)] = []
        timed.reserveCapacity(file.records.count)
        var missing = 0
        var backward = 0
        var duplicates = 0
        var firstBackward: (UInt32, UInt32)?
        var previous: UInt32?
        for (index, record) in file.records.enumerated() {
            guard let timestamp = record.timestamp else {
                missing += 1
                continue
            }
            if let previous {
                if timestamp < previous {
                    backward += 1
                    if firstBackward == nil { firstBackward = (previous, timestamp) }
                } else if timestamp == previous {
                    duplicates += 1
                }
            }
            previous = timestamp
            timed.append((timestamp, Int32(truncatingIfNeeded: index)))
        }
        if missing > 0 {
            anomalies.append(
                ImportAnomaly(
                    .recordsWithoutTimestamp, "\(plural(missing, "record")) had no timestamp and were dropped"))
        }
        if backward > 0, let (before, after) = firstBackward {
            anomalies.append(
                ImportAnomaly(
                    .timestampsBackward,
                    "\(plural(backward, "record")) step back in time (first: \(clockTime(Double(after))) after "
                        + "\(clockTime(Double(before)))); records were put in time order"))
        }
        if duplicates > 0 {
            anomalies.append(
                ImportAnomaly(
                    .duplicateTimestamps,
                    "\(plural(duplicates, "record")) repeat the timestamp of the record before them"))
        }
        timed.sort { $0.time == $1.time ? $0.index < $1.index : $0.time < $1.time }
        return SortedRecords(records: file.records, order: timed.map(\.index))
    }

    // MARK: legs

    mutating func planLegs(_ records: SortedRecords) throws(ImportError) {
        let usable = file.sessions.enumerated().compactMap { index, session -> (Int, FITSummary)? in
            guard session.startTime != nil, (session.totalElapsedTime ?? session.totalTimerTime) != nil else {
                return nil
            }
            return (index, session)
        }
        sessions = usable.sorted { lhs, rhs in
            let (a, b) = (lhs.1.startTime ?? 0, rhs.1.startTime ?? 0)
            return a == b ? lhs.0 < rhs.0 : a < b
        }.map(\.1)
        guard !sessions.isEmpty else {
            let times = records.map(\.time) + file.lengths.compactMap { $0.startTime.map(Double.init) }
            guard let first = times.min(), let last = times.max() else {
                throw .nothingToImport("the file has no session message and no record with a timestamp")
            }
            anomalies.append(
                ImportAnomaly(
                    .noSessions,
                    "the file has no session message; the workout spans its records (\(clockTime(first))–"
                        + "\(clockTime(last)))"))
            let sport = file.sports.first?.sport ?? file.laps.first?.sport
            let subSport = file.sports.first?.subSport ?? file.laps.first?.subSport
            appendLeg(session: nil, sport: sport, subSport: subSport, poolLength: nil, start: first, end: last)
            return
        }
        var spans = sessions.map { session -> (start: Double, end: Double) in
            let start = Double(session.startTime ?? 0)
            return (start, start + (session.totalElapsedTime ?? session.totalTimerTime ?? 0))
        }
        for index in spans.indices.dropLast() {
            let next = spans[index + 1].start
            guard spans[index].end > next else { continue }
            if spans[index].end > next + 1 {
                let elapsed = spans[index].end - spans[index].start
                let floor = index > 0 ? spans[index - 1].end : -Double.infinity
                var start = next - elapsed
                if start < floor { start = floor }
                if start >= next { start = spans[index].start }
                var detail =
                    "session \(index + 1) (\(FITProfile.Sport.name(sessions[index].sport))) starts at "
                    + "\(clockTime(spans[index].start)) and lasts \(seconds(elapsed)) s, so it would end at "
                    + "\(clockTime(spans[index].end)), after session \(index + 2) starts at \(clockTime(next))"
                if let lap = lapEnding(near: next, before: next) {
                    detail +=
                        "; its lap starting \(clockTime(lap.start)) ends at \(clockTime(lap.end)) "
                        + "(\(seconds(lap.end - lap.start)) s)"
                }
                detail +=
                    "; the session is taken to end where session \(index + 2) starts and to start "
                    + "\(seconds(elapsed)) s before (\(clockTime(start))–\(clockTime(next)))"
                anomalies.append(ImportAnomaly(.sessionContradiction, detail))
                spans[index] = (start, next)
            } else {
                spans[index].end = next
            }
        }
        for index in spans.indices.dropFirst() where spans[index].start < spans[index - 1].end {
            if spans[index - 1].end - spans[index].start > 1 {
                anomalies.append(
                    ImportAnomaly(
                        .sessionsOverlap,
                        "session \(index + 1) starts at \(clockTime(spans[index].start)), before session \(index) "
                            + "ends (\(clockTime(spans[index - 1].end))); it is taken to start there"))
            }
            spans[index].start = spans[index - 1].end
            spans[index].end = max(spans[index].end, spans[index].start)
        }
        for (index, session) in sessions.enumerated() {
            appendLeg(
                session: index, sport: session.sport, subSport: session.subSport, poolLength: session.poolLength,
                start: spans[index].start, end: spans[index].end)
        }
        // A damaged file loses the session written at the end of the leg under way at the damage:
        // when a sport message or a lap says a further leg began, the records after the last
        // surviving session are that leg (until a gap of over an hour: a damaged timestamp), not
        // data outside the workout.
        let sport = file.sports.count > sessions.count ? file.sports[sessions.count] : nil
        if file.damage != nil, let lastEnd = spans.last?.end {
            let lap = file.laps.filter { ($0.startTime.map(Double.init) ?? -1) >= lastEnd - 1 }
                .min { ($0.startTime ?? 0) < ($1.startTime ?? 0) }
            var lastRecord = lastEnd
            for record in records where record.time > lastEnd {
                if record.time - lastRecord > 3600 { break }
                lastRecord = record.time
            }
            guard sport != nil || lap != nil, lastRecord > lastEnd + 1 else { return }
            anomalies.append(
                ImportAnomaly(
                    .damagedFile,
                    "the session of the leg under way at the damage is lost; its records "
                        + "(\(clockTime(lastEnd))–\(clockTime(lastRecord))) make a leg of their own"))
            appendLeg(
                session: nil, sport: sport?.sport ?? lap?.sport, subSport: sport?.subSport ?? lap?.subSport,
                poolLength: nil, start: lastEnd, end: lastRecord)
        }
    }

    /// The lap whose declared end lies within 2 s of `time` and that starts before `limit`.
    func lapEnding(near time: Double, before limit: Double) -> (start: Double, end: Double)? {
        file.laps.compactMap { lap -> (start: Double, end: Double)? in
            guard let start = lap.startTime.map(Double.init), let end = lap.declaredEnd, start < limit,
                abs(end - time) <= 2
            else { return nil }
            return (start, end)
        }.min { $0.start < $1.start }
    }

    mutating func appendLeg(
        session: Int?, sport: UInt8?, subSport: UInt8?, poolLength: Double?, start: Double, end: Double
    ) {
        let type = Self.activityType(sport)
        var pool = false
        var lapLength: Double?
        if type == .swimming, subSport != FITProfile.SubSport.openWater {
            let hasLengths = file.lengths.contains { length in
                guard let lengthStart = length.startTime.map(Double.init) else { return false }
                return lengthStart >= start - 1 && lengthStart < end
            }
            pool = subSport == FITProfile.SubSport.lapSwimming || hasLengths
            if let poolLength, poolLength > 0, poolLength.isFinite { lapLength = poolLength }
        }
        // Indoor sub-sports (treadmill, indoor cycling, indoor walking) and pools are indoors; a leg
        // with GPS positions is outdoors.
        let location: LocationType
        if pool || subSport.map(FITProfile.SubSport.indoor.contains) == true {
            location = .indoor
        } else if file.records.contains(where: { record in
            guard record.positionLat != nil, let time = record.timestamp.map(Double.init) else { return false }
            return time >= start && time < max(end, start + 1)
        }) {
            location = .outdoor
        } else {
            location = .unknown
        }
        let configuration: WorkoutConfiguration
        if type == .swimming {
            configuration = WorkoutConfiguration(
                activityType: .swimming, locationType: location,
                swimmingLocationType: pool ? .pool : subSport == FITProfile.SubSport.openWater ? .openWater : .unknown,
                lapLength: lapLength.map { Quantity($0, .meter) })
        } else {
            configuration = WorkoutConfiguration(activityType: type, locationType: location)
        }
        legs.append(
            ImportedLeg(
                session: session, sport: sport, subSport: subSport, configuration: configuration,
                start: FITTime.date(start), end: FITTime.date(end), isPool: pool))
        legStarts.append(start)
        legEnds.append(end)
        poolLengths.append(pool ? lapLength : nil)
    }

    static func activityType(_ sport: UInt8?) -> WorkoutActivityType {
        switch sport {
        case FITProfile.Sport.running?: .running
        case FITProfile.Sport.cycling?: .cycling
        case FITProfile.Sport.transition?: .transition
        case FITProfile.Sport.swimming?: .swimming
        case FITProfile.Sport.walking?, FITProfile.Sport.hiking?: .walking
        case FITProfile.Sport.paddling?, FITProfile.Sport.standUpPaddleboarding?, FITProfile.Sport.kayaking?,
            FITProfile.Sport.rafting?:
            .paddleSports
        default: .other
        }
    }

    mutating func planConfiguration(_ records: SortedRecords) throws(ImportError) {
        workoutStart = legStarts.first ?? 0
        workoutEnd = legEnds.last ?? workoutStart
        // One session keeps its own configuration, unless automatic segmentation is asked for and the session is
        // a triathlon recorded in one sport (a watch left in running mode throughout), whose legs the detector
        // finds: `recordedAsOneSport`.
        if legs.count == 1, !(options.autoSegment && recordedAsOneSport(records)) {
            configuration = legs[0].configuration
            return
        }
        let types = legs.map(\.configuration.activityType)
        if legs.count == 1 {
            let outdoor = legs[0].configuration.locationType == .outdoor
            configuration = WorkoutConfiguration(
                activityType: .swimBikeRun, locationType: outdoor ? .outdoor : .unknown,
                swimmingLocationType: outdoor ? .openWater : .unknown)
        } else if types == [.swimming, .transition, .cycling, .transition, .running] {
            let swim = legs[0].configuration
            let outdoor = legs.contains { $0.configuration.locationType == .outdoor }
            configuration = WorkoutConfiguration(
                activityType: .swimBikeRun, locationType: outdoor ? .outdoor : .unknown,
                swimmingLocationType: swim.swimmingLocationType, lapLength: swim.lapLength)
            let plan = configuration.plannedLegs
            for index in legs.indices { legs[index].configuration = plan[index] }
        } else if options.autoSegment {
            // Any other multisport (a duathlon, a pool swim-run-swim): the legs are found from the sensors, the
            // workout keeps the file's swimming location and pool (its equipment, not its sports).
            let swim = legs.first { $0.configuration.activityType == .swimming }?.configuration
            let outdoor = legs.contains { $0.configuration.locationType == .outdoor }
            configuration = WorkoutConfiguration(
                activityType: .other, locationType: outdoor ? .outdoor : .unknown,
                swimmingLocationType: swim?.swimmingLocationType ?? .unknown, lapLength: swim?.lapLength)
        } else {
            configuration = WorkoutConfiguration(activityType: .other)
        }
        // With automatic segmentation the sequence of sports is the sensors' to say, not the file's sessions'.
        if options.autoSegment { legSequence = .detected }
    }

    /// The leg sequence the session is given (`BuilderOptions.legs`): detected with automatic segmentation of a
    /// multisport file (several sessions, or a triathlon recorded as one), else nil (the file's sessions say).
    var legSequence: LegSequence?

    /// Whether records are typed by what they carry (`ownTypes`), not by their session's sport: with automatic
    /// segmentation of a swim-bike-run plan only. A single session kept as it is (a plain run, ride or pool swim
    /// imported with `--auto-segment`) is typed by its sport, as without the flag: a slow walk opening a run is
    /// no swim.
    var typesRecordsByThemselves: Bool { options.autoSegment && legSequence != nil }

    /// Seconds of swim-typed records a single session needs to be planned as a triathlon (`recordedAsOneSport`):
    /// the shortest triathlon swims (super-sprint, 200–400 m) take 4 minutes and more.
    static let triathlonSwimEvidence = 120.0
    /// Seconds of records with riding cues a single session needs to be planned as a triathlon: the shortest
    /// triathlon rides (super-sprint, 5–10 km) take 10 minutes and more; a run's GPS glitches make seconds.
    static let triathlonRideEvidence = 300.0
    /// The longest gap (s) between records counted as evidence of the later record's type.
    static let evidenceGap = 10.0

    /// Whether the file's one session is a triathlon recorded in one sport: its sport is running, generic or
    /// multisport (a watch left in running mode, or one that names no sport), and its records, typed by what they
    /// carry themselves (`ownTypes`, as the record pass types them), show both `triathlonSwimEvidence` seconds of
    /// swimming and `triathlonRideEvidence` seconds of riding cues (a crank turn or a speed no one holds on foot,
    /// or power without a stride). A plain run, ride, walk or pool swim imported with automatic segmentation
    /// keeps its sport and configuration. (Asked only for one session with automatic segmentation.)
    func recordedAsOneSport(_ records: SortedRecords) -> Bool {
        guard let leg = legs.first,
            [FITProfile.Sport.running, FITProfile.Sport.generic, FITProfile.Sport.multisport].contains(leg.sport)
                || leg.sport == nil
        else { return false }
        var swim = OpeningSwim()
        var onFoot: Bool?
        var previousCycles: Double?
        var previousTime: Double?
        var swimming = 0.0
        var riding = 0.0
        for (time, record) in records {
            let types = Self.ownTypes(
                record, previousCycles: previousCycles, swimGoesOn: swim.goesOn, swimMode: swim.swimMode,
                lastOnFoot: &onFoot)
            swim.advance(record, at: time, typedSwimming: types.strokes)
            if let cycles = record.totalCycles { previousCycles = Double(cycles) }
            let seconds = previousTime.map { min(max(time - $0, 0), Self.evidenceGap) } ?? 0
            previousTime = time
            if types.strokes {
                swimming += seconds
            } else if types.distance == .distanceCycling,
                record.power != nil || (record.cadence ?? 0) > 0
                    || (record.speed ?? 0) > Self.fastestOnFoot
            {
                riding += seconds
            }
            if swimming >= Self.triathlonSwimEvidence, riding >= Self.triathlonRideEvidence { return true }
        }
        return false
    }

    mutating func planLegSteps() {
        guard legs.count > 1, !options.autoSegment else { return }
        for index in legs.indices {
            if index > 0 || configuration.plannedLegs.isEmpty {
                add(.beginLeg(index), at: legStarts[index], rank: .beginLeg)
            }
            if index + 1 < legs.count, legEnds[index] < legStarts[index + 1] - 0.000_5 {
                add(.endLeg(index), at: legEnds[index], rank: .endLeg)
            }
        }
    }

    // MARK: locating times

    /// The leg whose span [start, next start) holds `time` (typing of data); nil before the first.
    func leg(at time: Double) -> Int? {
        guard let first = legStarts.first, time >= first else { return nil }
        var low = 0
        var high = legStarts.count
        while low < high {
            let mid = (low + high) / 2
            if legStarts[mid] <= time { low = mid + 1 } else { high = mid }
        }
        return low - 1
    }

    func isInside(_ time: Double) -> Bool { time >= workoutStart && time <= workoutEnd }

    /// `hh:mm:ss` (UTC) of a FIT time, with milliseconds when it has a fraction (`07:14:45.76`).
    func clockTime(_ fitSeconds: Double) -> String {
        // The FIT epoch is a UTC midnight: the time of day is the remainder of a day.
        guard fitSeconds.isFinite, abs(fitSeconds) < 1e12 else { return "-" }
        let milliseconds = Int64((fitSeconds * 1000).rounded())
        let ofDay = ((milliseconds % 86_400_000) + 86_400_000) % 86_400_000
        let whole = ofDay / 1000
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var text = "\(two(whole / 3600)):\(two(whole / 60 % 60)):\(two(whole % 60))"
        var fraction = ofDay % 1000
        if fraction > 0 {
            var digits = 3
            while fraction % 10 == 0 {
                fraction /= 10
                digits -= 1
            }
            let padded = String(fraction)
            text += "." + String(repeating: "0", count: max(0, digits - padded.count)) + padded
        }
        return text
    }

    /// `1 record`, `3 records`.
    func plural(_ count: Int, _ noun: String) -> String { count == 1 ? "1 \(noun)" : "\(count) \(noun)s" }

    func seconds(_ value: Double) -> String {
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int(exactly: rounded) ?? 0) : String(rounded)
    }
}

/// The file's records in time order (by timestamp, then file order), without copying them: indices into
/// `FITFile.records`. Records without a timestamp are left out.
struct SortedRecords: RandomAccessCollection, Sendable {
    let records: [FITRecord]
    let order: [Int32]

    var startIndex: Int { 0 }
    var endIndex: Int { order.count }

    subscript(position: Int) -> (time: Double, record: FITRecord) {
        let record = records[Int(order[position])]
        return (Double(record.timestamp ?? 0), record)
    }
}

/// Makes the record steps of a plan again, one record at a time, in the order (and with the numbers) the planning
/// pass gave them: the replay takes them from here instead of from a list of them all.
struct RecordStepper: Sendable {
    var planner: ImportPlanner
    let records: SortedRecords

    /// Iterates the record steps in key order.
    struct Iterator: IteratorProtocol {
        var planner: ImportPlanner
        let records: SortedRecords
        var position = 0
        var buffer: [(key: StepKey, step: ImportStep)] = []
        var cursor = 0

        mutating func next() -> (key: StepKey, step: ImportStep)? {
            while cursor == buffer.count {
                guard position < records.count else { return nil }
                // The two buffers change places: no allocation per record.
                buffer.removeAll(keepingCapacity: true)
                swap(&buffer, &planner.steps)
                let (time, record) = records[position]
                position += 1
                planner.planRecord(at: time, record)
                swap(&buffer, &planner.steps)
                cursor = 0
            }
            defer { cursor += 1 }
            return buffer[cursor]
        }
    }

    func makeIterator() -> Iterator { Iterator(planner: planner, records: records) }
}

/// A `RecordStepper` by reference (a planner cannot hold one inline: the stepper holds a planner).
final class RecordStepperBox: Sendable {
    let stepper: RecordStepper
    init(_ stepper: RecordStepper) { self.stepper = stepper }
}
