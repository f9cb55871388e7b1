import Foundation
import WorkoutEngine
import WorkoutModel

/// A device's session figure that no message of its file holds: no import could give it.
public struct FigureNotInFile: Sendable, Hashable, Codable {
    /// 1-based session number.
    public var session: Int
    /// The fidelity check (`FidelitySummary.checkNames`).
    public var check: String
    /// The evidence, from the file.
    public var reason: String
}

/// The figures compared for a session or a lap, ours or the device's.
public struct ComparedFigures: Sendable, Hashable, Codable {
    public var averageHeartRate: Double?
    public var maximumHeartRate: Double?
    /// Metres.
    public var distance: Double?
    /// Seconds, pauses included.
    public var elapsed: Double?
    /// Seconds, pauses excluded.
    public var timerTime: Double?
    /// Pool lengths swum (FIT `num_lengths`; ours: lengths that are not rests).
    public var lengths: Int?
    /// FIT `num_active_lengths` (active and drill lengths; ours: lengths that are not rests).
    public var activeLengths: Int?
    public var strokes: Double?
    public var swolf: Double?
    /// Pool swims: average heart rate over the lengths swum, rests excluded (how Garmin averages a
    /// pool swim); ours from the engine's time-weighted average with the rests as pauses.
    public var swimmingHeartRate: Double?

    public init() {}
}

/// One row of a comparison: a session or a lap, the device's figures and ours.
public struct ComparisonRow: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable { case session, lap }
    public var kind: Kind
    /// 1-based number among the sessions or among the laps of the file.
    public var number: Int
    public var sport: String
    public var start: Date
    public var device: ComparedFigures
    public var ours: ComparedFigures
}

/// Our workout next to the device's own summaries, per session and lap.
///
/// Sessions map to our activities by order (or to the workout when there is a single session);
/// laps map by time: a pool swim's laps to our swim sets, other laps to our lap events.
public struct FITComparison: Sendable, Hashable, Codable {
    public var rows: [ComparisonRow]
    /// Session figures of the device that no message of the file holds, so that no import can give
    /// them (`FigureNotInFile`); computed only where ours disagree.
    public var notInFile: [FigureNotInFile] = []

    /// Compares `workout` (imported from `plan`) with the device's summaries; `samples` are the
    /// workout's saved samples (for lap and swimming figures, computed by the engine).
    public init(plan: FITImportPlan, workout: Workout, samples: [QuantitySample]) {
        var rows: [ComparisonRow] = []
        var notInFile: [FigureNotInFile] = []
        let inactive = Self.inactiveSpans(workout.events, end: workout.end)
        // Readings of the heart-rate recovery window (after the end) are not exercise.
        let heartRate = samples.filter { $0.type == .heartRate && !$0.isHeartRateRecoveryReading }
            .sorted { $0.start < $1.start }
        let distances = samples.filter { Self.distanceTypes.contains($0.type) }
        let lengths = workout.events.compactMap { event in PoolLength(event).map { (event, $0) } }
        for (index, session) in plan.sessions.enumerated() {
            var ours = ComparedFigures()
            let span: (start: Date, end: Date, duration: TimeInterval, statistics: [QuantityType: Statistics])
            if plan.sessions.count == 1 || workout.activities.count != plan.sessions.count {
                if plan.sessions.count > 1 {
                    // Automatic segmentation found another number of legs: compare with the detected leg
                    // covering the session's middle.
                    let middle = plan.legs[index].start.addingTimeInterval(
                        plan.legs[index].end.timeIntervalSince(plan.legs[index].start) / 2)
                    if let activity = workout.activities.first(where: {
                        $0.start <= middle && ($0.end ?? workout.end) > middle
                    }) {
                        span = (activity.start, activity.end ?? workout.end, activity.duration, activity.statistics)
                    } else {
                        span = (plan.legs[index].start, plan.legs[index].end, 0, [:])
                    }
                } else {
                    span = (workout.start, workout.end, workout.duration, workout.statistics)
                }
            } else {
                let activity = workout.activities[index]
                span = (activity.start, activity.end ?? workout.end, activity.duration, activity.statistics)
            }
            ours.averageHeartRate = span.statistics[.heartRate]?.average?.doubleValue(for: .countPerMinute)
            ours.maximumHeartRate = span.statistics[.heartRate]?.maximum?.doubleValue(for: .countPerMinute)
            let sums = Self.distanceTypes.compactMap { span.statistics[$0]?.sum?.doubleValue(for: .meter) }
            ours.distance = sums.isEmpty ? nil : sums.reduce(0, +)
            ours.elapsed = span.end.timeIntervalSince(span.start)
            ours.timerTime = span.duration
            ours.strokes = span.statistics[.swimmingStrokeCount]?.sum?.doubleValue(for: .count)
            ours.swolf = span.statistics[.swimmingSWOLF]?.average?.value
            let inSpan = lengths.filter { $0.0.start >= span.start && $0.0.start < span.end }
            if !inSpan.isEmpty {
                let swum = inSpan.filter { $0.1.kind != .rest }
                ours.lengths = swum.count
                ours.activeLengths = swum.count
                let rests = inSpan.filter { $0.1.kind == .rest }.map { ($0.0.start, $0.0.end) }
                ours.swimmingHeartRate = Self.spanStatistics(
                    heartRate, from: span.start, to: span.end, inactive: Self.merge(inactive + rests),
                    options: plan.builderOptions)?[.heartRate]?
                    .average?.doubleValue(for: .countPerMinute)
            }
            var device = Self.figures(session)
            if session.sport == FITProfile.Sport.swimming, (session.numLengths ?? 0) > 0 {
                device.swimmingHeartRate = session.avgHeartRate.map(Double.init)
            }
            if let maximum = device.maximumHeartRate, let ourMaximum = ours.maximumHeartRate, ourMaximum < maximum,
                let reason = Self.maximumNotInFile(plan.file, session, maximum: maximum)
            {
                notInFile.append(FigureNotInFile(session: index + 1, check: "max HR", reason: reason))
            }
            if let distance = device.distance, distance > 0, let ourDistance = ours.distance,
                ourDistance < distance * (1 - FidelitySummary.distanceTolerance),
                let reason = Self.distanceNotInFile(plan.file, sessions: plan.sessions, index: index)
            {
                notInFile.append(FigureNotInFile(session: index + 1, check: "distance", reason: reason))
            }
            rows.append(
                ComparisonRow(
                    kind: .session, number: index + 1, sport: FITProfile.Sport.name(session.sport),
                    start: FITTime.date(Double(session.startTime ?? 0)), device: device, ours: ours))
        }
        let sets = workout.events.filter { $0.metadata[MetadataKey.segmentKind] == .string("swimSet") }
        var laps = workout.events.filter { $0.type == .lap && PoolLength($0) == nil }
        // A leg without lap events had a single lap in the file: that lap is the leg itself.
        let spans =
            workout.activities.isEmpty
            ? [(workout.start, workout.end)] : workout.activities.map { ($0.start, $0.end ?? workout.end) }
        for (start, end) in spans where !laps.contains(where: { $0.start >= start && $0.start < end }) {
            laps.append(WorkoutEvent(type: .segment, start: start, duration: end.timeIntervalSince(start)))
        }
        let orderedLaps = plan.file.laps.enumerated().sorted {
            ($0.element.startTime ?? 0, $0.offset) < ($1.element.startTime ?? 0, $1.offset)
        }
        for (number, entry) in orderedLaps.enumerated() {
            let lap = entry.element
            guard let startTime = lap.startTime, let lapEnd = lap.declaredEnd else { continue }
            let lapStart = FITTime.date(Double(startTime))
            let lapStop = FITTime.date(lapEnd)
            var ours = ComparedFigures()
            let pool = plan.legs.contains {
                $0.isPool && $0.start <= lapStart.addingTimeInterval(0.5) && $0.end > lapStart
            }
            let candidates = pool ? ((lap.numActiveLengths ?? 0) > 0 ? sets : []) : laps
            let openWater = plan.legs.contains {
                $0.configuration.swimmingLocationType == .openWater && $0.start <= lapStart.addingTimeInterval(0.5)
                    && $0.end > lapStart
            }
            if let match = Self.bestOverlap(candidates, lapStart, lapStop) {
                ours.elapsed = match.duration
                if pool {
                    if case .int(let count)? = match.metadata[SwimMetadataKey.lengths] {
                        ours.lengths = count
                        ours.activeLengths = count
                    }
                    if case .double(let swolf)? = match.metadata[SwimMetadataKey.swolf] { ours.swolf = swolf }
                    let inSet = lengths.filter {
                        $0.0.start >= match.start && $0.0.end <= match.end.addingTimeInterval(0.001)
                    }
                    ours.strokes = Double(inSet.compactMap { $0.1.strokes }.reduce(0, +))
                    ours.distance = plan.legs.first { $0.isPool }?.configuration.lapLength.map {
                        $0.value * Double(inSet.filter { $0.1.kind != .rest }.count)
                    }
                }
                let strokeSamples = openWater ? samples.filter { $0.type == .swimmingStrokeCount } : []
                let statistics = Self.spanStatistics(
                    heartRate + (pool ? [] : distances + strokeSamples), from: match.start, to: match.end,
                    inactive: Self.merge(inactive), options: plan.builderOptions)
                ours.timerTime = statistics?.duration
                ours.averageHeartRate = statistics?[.heartRate]?.average?.doubleValue(for: .countPerMinute)
                ours.maximumHeartRate = statistics?[.heartRate]?.maximum?.doubleValue(for: .countPerMinute)
                if !pool, let statistics {
                    let sums = Self.distanceTypes.compactMap { statistics[$0]?.sum?.doubleValue(for: .meter) }
                    ours.distance = sums.isEmpty ? nil : sums.reduce(0, +)
                    ours.strokes = statistics[.swimmingStrokeCount]?.sum?.doubleValue(for: .count)
                    if openWater, let convention = plan.builderOptions.openWaterSWOLF, let strokes = ours.strokes,
                        let meters = ours.distance
                    {
                        ours.swolf = convention.value(
                            seconds: statistics.duration, strokes: strokes, meters: meters)
                    }
                }
            }
            rows.append(
                ComparisonRow(
                    kind: .lap, number: number + 1, sport: FITProfile.Sport.name(lap.sport), start: lapStart,
                    device: Self.figures(lap), ours: ours))
        }
        self.rows = rows
        self.notInFile = notInFile
    }

    /// Why the device's maximum heart rate of `session` cannot come from the file, if it cannot: no
    /// record and no strap beat within a second of the session reads it. (A watch's maximum is of
    /// its own once-a-second values; smart recording writes only some of them.)
    static func maximumNotInFile(_ file: FITFile, _ session: FITSummary, maximum: Double) -> String? {
        guard let startTime = session.startTime, let elapsed = session.totalElapsedTime else { return nil }
        let start = Double(startTime) - 1
        let end = Double(startTime) + elapsed + 1
        var previous: Double?
        var widestGap = 0.0
        var readings = 0
        for record in file.records {
            guard let timestamp = record.timestamp.map(Double.init), timestamp >= start, timestamp <= end else {
                continue
            }
            if let previous { widestGap = max(widestGap, timestamp - previous) }
            previous = timestamp
            guard let heartRate = record.heartRate else { continue }
            if Double(heartRate) == maximum { return nil }
            readings += 1
        }
        for beat in file.heartBeats where beat.time >= start && beat.time <= end {
            if Double(beat.bpm) == maximum { return nil }
            readings += 1
        }
        guard readings > 0 else { return nil }
        return "none of the \(readings) heart-rate readings of records and strap beats within a second of the session "
            + "reads \(Int(maximum)) bpm (records up to \(Int(widestGap.rounded())) s apart: the device's "
            + "once-a-second values between them are not in the file)"
    }

    /// Why the device's distance of session `index` cannot come from the file, if it cannot: the
    /// sessions tile the records' distance counter, and even the widest gain the records allow over this
    /// session (from the last record before its start to the first at or after its end, or the last
    /// record where none follows) falls short of the session's distance by more than the check's
    /// tolerance, while the counter never goes back. A shortfall of an earlier leg does not explain a
    /// later one: each leg is judged on its own records.
    static func distanceNotInFile(_ file: FITFile, sessions: [FITSummary], index: Int) -> String? {
        let session = sessions[index]
        guard let own = session.totalDistance, own.isFinite, own > 0, let startTime = session.startTime,
            let elapsed = session.totalElapsedTime, elapsed.isFinite, elapsed >= 0
        else { return nil }
        let start = Double(startTime)
        let end = start + elapsed
        var atStart = 0.0
        var last: (time: Double, distance: Double)?
        var highest = -Double.infinity
        for record in file.records {
            guard let distance = record.distance, distance.isFinite, let timestamp = record.timestamp else { continue }
            // A counter that restarts may have reached the total before: nothing to say then.
            if distance < highest - 1 { return nil }
            highest = max(highest, distance)
            let time = Double(timestamp)
            if time < start { atStart = distance }
            if let last, last.time >= end { continue }
            last = (time, distance)
        }
        guard let last, last.time >= start, last.distance - atStart < own * (1 - FidelitySummary.distanceTolerance)
        else { return nil }
        var reason = String(
            format: "the records' distance gains %.2f m over the session, from %.2f m at its start to %.2f m, "
                + "short of the %.2f m the device states", last.distance - atStart, atStart, last.distance, own)
        let before = end - last.time
        if before > 0 { reason += String(format: " (the records' last, %.1f s before the session's end)", before) }
        return reason
    }

    static let distanceTypes: [QuantityType] = [
        .distanceSwimming, .distanceCycling, .distanceWalkingRunning, .distancePaddleSports,
    ]

    static func figures(_ summary: FITSummary) -> ComparedFigures {
        var figures = ComparedFigures()
        figures.averageHeartRate = summary.avgHeartRate.map(Double.init)
        figures.maximumHeartRate = summary.maxHeartRate.map(Double.init)
        figures.distance = summary.totalDistance
        figures.elapsed = summary.totalElapsedTime
        figures.timerTime = summary.totalTimerTime
        figures.lengths = summary.numLengths.map(Int.init)
        figures.activeLengths = summary.numActiveLengths.map(Int.init)
        if summary.sport == FITProfile.Sport.swimming { figures.strokes = summary.totalCycles.map(Double.init) }
        figures.swolf = summary.avgSwolf.flatMap { $0 > 0 ? Double($0) : nil }
        return figures
    }

    /// The event overlapping [start, end) the most, if that covers at least half of either span.
    static func bestOverlap(_ events: [WorkoutEvent], _ start: Date, _ end: Date) -> WorkoutEvent? {
        var best: (WorkoutEvent, TimeInterval)?
        for event in events {
            let overlap = min(event.end, end).timeIntervalSince(max(event.start, start))
            if overlap > 0, overlap > (best?.1 ?? 0) { best = (event, overlap) }
        }
        guard let (event, overlap) = best else { return nil }
        let shorter = min(event.duration, end.timeIntervalSince(start))
        return overlap >= shorter / 2 ? event : nil
    }

    /// The workout's paused spans (user and motion pauses merged).
    static func inactiveSpans(_ events: [WorkoutEvent], end: Date) -> [(Date, Date)] {
        var spans: [(Date, Date)] = []
        var user = false
        var motion = false
        var since: Date?
        for event in events.sorted(by: { $0.start < $1.start }) {
            switch event.type {
            case .pause: user = true
            case .resume: user = false
            case .motionPaused: motion = true
            case .motionResumed: motion = false
            default: continue
            }
            if user || motion {
                if since == nil { since = event.start }
            } else if let start = since {
                spans.append((start, event.start))
                since = nil
            }
        }
        if let since { spans.append((since, end)) }
        return spans
    }

    static func merge(_ spans: [(Date, Date)]) -> [(Date, Date)] {
        var merged: [(Date, Date)] = []
        for span in spans.sorted(by: { $0.0 < $1.0 }) where span.1 > span.0 {
            if let last = merged.last, span.0 <= last.1 {
                merged[merged.count - 1].1 = max(last.1, span.1)
            } else {
                merged.append(span)
            }
        }
        return merged
    }

    /// Statistics of `samples` over [from, to] with `inactive` spans paused, computed by a builder of
    /// the engine (as the store's statistics query does), and the span's active duration.
    static func spanStatistics(
        _ samples: [QuantitySample], from: Date, to: Date, inactive: [(Date, Date)], options: BuilderOptions
    )
        -> SpanStatistics?
    {
        guard to > from else { return nil }
        do {
            let types = Set(samples.map(\.type))
            let builder = try LiveWorkoutBuilder(
                configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(to),
                options: BuilderOptions(
                    holdCap: options.holdCap,
                    dataSource: WorkoutDataSource(explicitTypes: types.isEmpty ? [.heartRate] : types),
                    interpolation: options.interpolation))
            try builder.beginCollection(at: from)
            var events: [WorkoutEvent] = []
            for (start, end) in inactive where end > from && start < to {
                events.append(WorkoutEvent(type: .pause, start: max(start, from)))
                if end < to { events.append(WorkoutEvent(type: .resume, start: end)) }
            }
            try builder.add(events)
            var clipped: [QuantitySample] = []
            for var sample in samples {
                if sample.type.aggregationStyle == .cumulative, sample.end > sample.start {
                    let low = max(sample.start, from)
                    let high = min(sample.end, to)
                    guard high > low else { continue }
                    sample.quantity.value *= high.timeIntervalSince(low) / sample.duration
                    sample.start = low
                    sample.end = high
                } else {
                    guard sample.start >= from, sample.start <= to else { continue }
                    sample.end = min(sample.end, to)
                }
                clipped.append(sample)
            }
            try builder.add(clipped)
            try builder.endCollection(at: to)
            let snapshot = builder.snapshot()
            return SpanStatistics(statistics: snapshot.statistics, duration: snapshot.duration)
        } catch {
            return nil
        }
    }
}

/// Statistics of a span with its active duration.
struct SpanStatistics {
    var statistics: [QuantityType: Statistics]
    var duration: TimeInterval

    subscript(type: QuantityType) -> Statistics? { statistics[type] }
}
