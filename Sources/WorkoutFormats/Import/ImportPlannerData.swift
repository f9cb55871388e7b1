import Foundation
import WorkoutEngine
import WorkoutModel

/// The data part of the plan: lengths, pauses, records, heart beats and laps.
extension ImportPlanner {
    /// Seconds after the end whose heart rate may feed the heart-rate recovery.
    static let recoveryWindow = 130.0
    /// Seconds a strap's beat carries across a gap before the next one (Garmin's SDK: 5 s).
    static let strapCarry = 5.0

    // MARK: pool lengths

    /// Pool lengths become lap events (kind, style, strokes) with their distance and strokes as
    /// samples. Start times are whole seconds while durations have milliseconds, and several lengths
    /// of a drill may share one start time, so a length that starts within a second of the previous
    /// one's end (or before it) without a timer stop between them is laid end to end after it. A
    /// later start is a rest the watch did not log as a length: the length keeps its start.
    mutating func planLengths() {
        let poolLegs = legs.indices.filter { legs[$0].isPool }
        guard !poolLegs.isEmpty else { return }
        let stops = file.events.compactMap { event -> Double? in
            guard event.event == FITProfile.Event.timer, let type = event.eventType,
                FITProfile.EventType.stopsTimer(type),
                let time = event.timestamp
            else { return nil }
            return Double(time)
        }.sorted()
        var timed = file.lengths.enumerated().compactMap {
            index, length -> (start: Double, length: FITLength, index: Int)? in
            guard let start = length.startTime else { return nil }
            return (Double(start), length, index)
        }
        timed.sort { $0.start == $1.start ? $0.index < $1.index : $0.start < $1.start }
        var moved = 0
        var clipped = 0
        var outside = 0
        var corrupt = 0
        for legIndex in poolLegs {
            let legStart = legStarts[legIndex]
            let legEnd = legEnds[legIndex]
            let nextStart = legIndex + 1 < legStarts.count ? legStarts[legIndex + 1] : Double.infinity
            let inLeg = timed.filter { $0.start >= legStart - 1 && $0.start < nextStart }
            var laid: [(start: Double, end: Double)] = []
            var previous: (declared: Double, end: Double)?
            for (position, entry) in inLeg.enumerated() {
                let length = entry.length
                var duration =
                    length.totalElapsedTime ?? length.totalTimerTime
                    ?? length.timestamp.map { Double($0) - entry.start } ?? 0
                guard duration.isFinite, duration > 0 else { continue }
                // A length longer than its whole session is no time (a Forerunner 965 wrote an idle
                // length of 131,064.7 s in a 998 s swim): it ends where the next length starts, so
                // the lengths after it keep their places.
                if duration > legEnd - legStart + 1 {
                    let next = position + 1 < inLeg.count ? inLeg[position + 1].start : legEnd
                    duration = max(0, min(next, legEnd) - entry.start)
                    corrupt += 1
                    guard duration > 0 else { continue }
                }
                var start: Double
                if let previous, entry.start <= previous.end + 1,
                    !stops.contains(where: { $0 > previous.declared && $0 <= entry.start })
                {
                    start = previous.end
                } else {
                    start = max(entry.start, legStart, previous?.end ?? -Double.infinity)
                }
                if start > entry.start + 1 { moved += 1 }
                if start >= legEnd {
                    outside += 1
                    continue
                }
                var end = start + duration
                if end > legEnd {
                    // Under a second over is the rounding of whole-second start times; more is reported.
                    if end > legEnd + 1 { clipped += 1 }
                    end = legEnd
                }
                previous = (entry.start, end)
                laid.append((start, end))
                addLength(length, start: start, end: end, leg: legIndex)
            }
            poolLengthSpans[legIndex] = laid
        }
        if moved > 0 {
            anomalies.append(
                ImportAnomaly(
                    .lengthsOverlap,
                    "\(plural(moved, "pool length")) start more than a second before the length before them ends (a drill's "
                        + "lengths may share one start time); they were laid end to end"))
        }
        if corrupt > 0 {
            anomalies.append(
                ImportAnomaly(
                    .eventsClipped,
                    "\(plural(corrupt, "pool length")) last longer than their whole session; each was taken to end "
                        + "where the next length starts"))
        }
        if clipped + outside > 0 {
            anomalies.append(
                ImportAnomaly(
                    .eventsClipped,
                    "\(plural(clipped, "pool length")) cut at the end of their session, \(outside) outside it (dropped)"
                ))
        }
    }

    mutating func addLength(_ length: FITLength, start: Double, end: Double, leg: Int) {
        let kind: LengthKind =
            length.lengthType == FITProfile.LengthType.idle
            ? .rest : length.swimStroke == FITProfile.SwimStroke.drill ? .drill : .active
        var metadata: Metadata = [SwimMetadataKey.lengthKind: .string(kind.rawValue)]
        if kind != .rest, let style = Self.styleName(length.swimStroke) {
            metadata[SwimMetadataKey.strokeStyle] = .string(style)
        }
        if kind == .active, let strokes = length.totalStrokes {
            metadata[SwimMetadataKey.strokes] = .int(Int(strokes))
        }
        let startDate = FITTime.date(start)
        let endDate = FITTime.date(end)
        // A rest is known when it begins (the watch shows it resting): delivered then, so the
        // engine leaves it out of the averages of the readings that follow.
        add(
            .events([WorkoutEvent(type: .lap, start: startDate, duration: end - start, metadata: metadata)]),
            at: kind == .rest ? start : end, rank: .data)
        var samples: [QuantitySample] = []
        if kind != .rest, let pool = poolLengths[leg] {
            samples.append(QuantitySample(.distanceSwimming, pool, at: startDate, end: endDate, source: device))
        }
        if kind == .active, let strokes = length.totalStrokes, strokes > 0 {
            samples.append(
                QuantitySample(.swimmingStrokeCount, Double(strokes), at: startDate, end: endDate, source: device))
        }
        if !samples.isEmpty {
            sampleCount += samples.count
            add(.samples(samples), at: end, rank: .data)
        }
    }

    /// The engine's stroke style name of a FIT `swim_stroke`.
    static func styleName(_ stroke: UInt8?) -> String? {
        switch stroke {
        case FITProfile.SwimStroke.freestyle?: "freestyle"
        case FITProfile.SwimStroke.backstroke?: "backstroke"
        case FITProfile.SwimStroke.breaststroke?: "breaststroke"
        case FITProfile.SwimStroke.butterfly?: "butterfly"
        case FITProfile.SwimStroke.drill?: "drill"
        case FITProfile.SwimStroke.mixed?: "mixed"
        case FITProfile.SwimStroke.im?, FITProfile.SwimStroke.imByRound?: "im"
        default: nil
        }
    }

    // MARK: pauses

    /// Timer stops and starts become pauses (auto-pauses: motion pauses); in a pool swim the
    /// lengths refine the timer events' whole seconds (see below).
    mutating func planPauses(_ records: SortedRecords) {
        var spans: [(start: Double, end: Double, motion: Bool)] = []
        var stoppedAt: (time: Double, motion: Bool)?
        var timerEvents = file.events.enumerated().compactMap { index, event -> (Double, UInt8, Bool, Int)? in
            guard event.event == FITProfile.Event.timer, let type = event.eventType, let time = event.timestamp else {
                return nil
            }
            return (Double(time), type, event.data == FITProfile.TimerTrigger.auto, index)
        }.sorted { $0.0 == $1.0 ? $0.3 < $1.3 : $0.0 < $1.0 }
        timerEvents = withPowerGaps(timerEvents, records: records)
        // COROS counts the second of each timer start as timed: its pauses are a second shorter than
        // their stop and start events (its laps' and session's timer times say so).
        let resumeLead = file.fileIDs.first?.manufacturer == FITProfile.Manufacturer.coros ? 1.0 : 0
        for (time, type, motion, _) in timerEvents {
            if FITProfile.EventType.stopsTimer(type) {
                if stoppedAt == nil { stoppedAt = (time, motion) }
            } else if type == FITProfile.EventType.start, let stop = stoppedAt {
                spans.append((stop.time, max(stop.time, time - resumeLead), stop.motion))
                stoppedAt = nil
            }
        }
        if let stop = stoppedAt { spans.append((stop.time, Double.infinity, stop.motion)) }
        // Pool legs: the timer events say when the timer runs (whole seconds). A watch that logs
        // rests as idle lengths fills a running span with lengths end to end: when they start and
        // end within 2 s of the span's events, their millisecond times are its edges. A rest the
        // watch did not log leaves a gap between lengths, and the timer runs through it.
        for leg in poolLengthSpans.keys.sorted() {
            guard let lengths = poolLengthSpans[leg], !lengths.isEmpty else { continue }
            let legStart = legStarts[leg]
            let legEnd = legEnds[leg]
            var running: [(start: Double, end: Double)] = []
            var cursor = legStart
            for span in spans.sorted(by: { $0.start < $1.start }) where span.end > legStart && span.start < legEnd {
                if span.start > cursor { running.append((cursor, span.start)) }
                cursor = max(cursor, span.end)
            }
            if legEnd > cursor { running.append((cursor, legEnd)) }
            spans = spans.flatMap { span -> [(start: Double, end: Double, motion: Bool)] in
                var parts: [(start: Double, end: Double, motion: Bool)] = []
                if span.start < legStart { parts.append((span.start, min(span.end, legStart), span.motion)) }
                if span.end > legEnd { parts.append((max(span.start, legEnd), span.end, span.motion)) }
                return parts
            }
            cursor = legStart
            for var span in running {
                let inside = lengths.filter { $0.start >= span.start - 2 && $0.start < span.end }
                let filled = zip(inside, inside.dropFirst()).allSatisfy { $1.start - $0.end <= 1 }
                if filled, let first = inside.first, let last = inside.last, abs(first.start - span.start) <= 2,
                    abs(last.end - span.end) <= 2
                {
                    span = (max(legStart, first.start), min(legEnd, last.end))
                }
                if span.start > cursor { spans.append((cursor, span.start, false)) }
                cursor = max(cursor, span.end)
            }
            if legEnd > cursor { spans.append((cursor, legEnd, false)) }
        }
        spans = spans.compactMap { span in
            let start = max(span.start, workoutStart)
            let end = min(span.end, workoutEnd)
            return end > start && start < workoutEnd ? (start, end, span.motion) : nil
        }
        spans.sort { $0.start < $1.start }
        var merged: [(start: Double, end: Double, motion: Bool)] = []
        for span in spans {
            if let last = merged.last, span.start <= last.end {
                merged[merged.count - 1].end = max(last.end, span.end)
                merged[merged.count - 1].motion = last.motion && span.motion
            } else {
                merged.append(span)
            }
        }
        pausedSpans = merged.map { ($0.start, $0.end) }
        for span in merged {
            add(.pause(motion: span.motion), at: span.start, rank: .pause)
            if span.end < workoutEnd { add(.resume(motion: span.motion), at: span.end, rank: .pause) }
        }
    }

    /// Seconds of [from, to] the timer is stopped (`pausedSpans`).
    func pausedOverlap(_ from: Double, _ to: Double) -> Double {
        var total = 0.0
        for span in pausedSpans where span.end > from && span.start < to {
            total += min(span.end, to) - max(span.start, from)
        }
        return total
    }

    /// Timer events with the gaps of device reboots added: a `power_down` stops the timer; a
    /// `power_up` while the timer runs means the device went off unannounced (a flat battery, a
    /// crash), so the timer stopped after the last record or event before it. Either way the timer
    /// runs again at the `power_up`, unless the device's own timer start follows before any stop.
    func withPowerGaps(
        _ timerEvents: [(Double, UInt8, Bool, Int)], records: SortedRecords
    ) -> [(Double, UInt8, Bool, Int)] {
        let power = file.events.compactMap { event -> (time: Double, up: Bool)? in
            guard let time = event.timestamp, event.event == FITProfile.Event.powerDown || event.event == FITProfile.Event.powerUp
            else { return nil }
            return (Double(time), event.event == FITProfile.Event.powerUp)
        }.sorted { $0.time < $1.time }
        guard !power.isEmpty else { return timerEvents }
        let recordTimes = records.map(\.time)
        let stop = FITProfile.EventType.stopAll
        let start = FITProfile.EventType.start
        var events = timerEvents
        var added = 0
        for event in power where event.time > workoutStart && event.time < workoutEnd {
            // The timer's state just before the power event, from the events so far.
            let before = events.filter { $0.0 < event.time }.sorted { $0.0 == $1.0 ? $0.3 < $1.3 : $0.0 < $1.0 }
            let running = before.last.map { !FITProfile.EventType.stopsTimer($0.1) } ?? true
            added += 1
            if !event.up {
                if running { events.append((event.time, stop, false, -added)) }
                continue
            }
            if running {
                // Unannounced: the last sign of life before the power-up.
                var low = 0
                var high = recordTimes.count
                while low < high {
                    let mid = (low + high) / 2
                    if recordTimes[mid] < event.time { low = mid + 1 } else { high = mid }
                }
                let lastRecord = low > 0 ? recordTimes[low - 1] : -Double.infinity
                let lastEvent = before.last?.0 ?? -Double.infinity
                let gapStart = max(lastRecord, lastEvent, workoutStart)
                guard gapStart < event.time else { continue }
                events.append((gapStart, stop, false, -added))
            }
            let next = events.filter { $0.0 >= event.time }.min { $0.0 < $1.0 }
            if next.map({ $0.1 != start }) ?? true { events.append((event.time, start, false, Int.max - added)) }
        }
        return events.sorted { $0.0 == $1.0 ? $0.3 < $1.3 : $0.0 < $1.0 }
    }

    // MARK: records

    /// What a record's values become in a leg of some activity type.
    struct LegTypes {
        var distance: QuantityType?
        var speed: QuantityType?
        var cadence: QuantityType?
        /// Running cadence is steps per minute; FIT records strides per minute.
        var cadenceFactor = 1.0
        var power: QuantityType?
        var stride: QuantityType?
        var strokes = false
        /// Typed running by its running dynamics' step (`ownTypes`' step test: a step of a step that agrees with the
        /// speed and cadence, on foot).
        var runningStep = false

        init(_ type: WorkoutActivityType, pool: Bool) {
            switch type {
            case .swimming:
                distance = pool ? nil : .distanceSwimming
                strokes = !pool
            case .cycling:
                distance = .distanceCycling
                speed = .cyclingSpeed
                cadence = .cyclingCadence
                power = .cyclingPower
            case .running, .walking:
                distance = .distanceWalkingRunning
                speed = .runningSpeed
                cadence = .runningCadence
                cadenceFactor = 2
                power = .runningPower
                stride = .runningStrideLength
            case .paddleSports:
                distance = .distancePaddleSports
                speed = .paddleSportsSpeed
            case .transition, .other, .swimBikeRun:
                distance = .distanceWalkingRunning
            }
        }
    }

    func types(_ leg: Int?) -> LegTypes? {
        guard let leg else { return nil }
        // A pool leg without a known pool length takes its distance from the records.
        return LegTypes(legs[leg].configuration.activityType, pool: legs[leg].isPool && poolLengths[leg] != nil)
    }

    /// The steps of one record (in time order): its samples and route point; the running counters in `recordPass`.
    ///
    /// Records' heart rate and a strap's stored beats (`hr` messages) are merged per record
    /// interval as Garmin's SDK merges them (`merge_heart_rates`): a record whose interval since the
    /// record before it (at least its own second) holds a beat takes the strap's beats; every other
    /// record keeps its own reading. A swim strap's memory covers the swim and a little around it,
    /// the records every leg: no leg loses the heart rate the device kept. Out of the water, a
    /// record reading another sensor than the strap keeps its reading (`planHeartRateSources`).
    mutating func planRecord(at recordTime: Double, _ record: FITRecord) {
        // The pass's state is changed in place (copying its counters out and back, names and all, cost every
        // record a dozen copies).
        let previousRecord = recordPass.previousRecord
        var nextBeat = recordPass.nextBeat
        let intervalStart = min(recordPass.previousRecordTime ?? recordTime - 1, recordTime - 1)
        defer {
            recordPass.previousRecordTime = recordTime
            recordPass.nextBeat = nextBeat
        }
        let beatTimes = recordBeatTimes
        /// Whether the strap's beats cover (from, to]: a beat lies in it, or it falls in a gap
        /// between two beats within 5 s of the beat before (the SDK carries a beat's value 5 s
        /// across a gap: a strap's stream is not broken by a missed beat or two).
        func strapCovers(_ from: Double, _ to: Double) -> Bool {
            while nextBeat < beatTimes.count, beatTimes[nextBeat] <= from { nextBeat += 1 }
            guard nextBeat < beatTimes.count else { return false }
            return beatTimes[nextBeat] <= to || (nextBeat > 0 && beatTimes[nextBeat - 1] > from - Self.strapCarry)
        }
        let heartRateFromRecords =
            beatTimes.isEmpty || !strapCovers(intervalStart, recordTime) || otherSensorRecords.contains(recordTime)
        // FIT timestamps are whole seconds while a session's end has milliseconds: a record
        // less than a second after a session's end (the workout's, or a leg's followed by a gap)
        // is the one the device wrote as its timer stopped (its values count in the session),
        // taken at the end. (Automatic segmentation does not see the inner ends.)
        var time = recordTime
        if recordTime > workoutEnd {
            if recordTime - workoutEnd < 1 { time = workoutEnd }
        } else if !options.autoSegment, let leg = leg(at: recordTime), recordTime > legEnds[leg],
            recordTime - legEnds[leg] < 1
        {
            time = legEnds[leg]
        }
        defer { recordPass.previousRecord = time }
        // Room for a record's samples at once (growing from empty took up to three allocations a record).
        var batch: [QuantitySample] = []
        batch.reserveCapacity(6)
        let inside = isInside(time)
        let date = FITTime.date(time)
        if !inside {
            if time > workoutEnd, time <= workoutEnd + Self.recoveryWindow, heartRateFromRecords,
                let heartRate = record.heartRate
            {
                recovery.append(QuantitySample(.heartRate, Double(heartRate), at: date, source: device))
            } else if time < workoutStart {
                recordsBefore += 1
            } else {
                recordsAfter += 1
            }
        }
        // With automatic segmentation the leg's sport is hidden: a record is typed by what it
        // carries itself (`ownTypes`), as a recorder's sensors type their readings.
        var own =
            typesRecordsByThemselves
            ? Self.ownTypes(
                record, previousCycles: recordPass.cycles.reference, swimGoesOn: recordPass.swim.goesOn,
                swimMode: recordPass.swim.swimMode, lastOnFoot: &recordPass.onFoot)
            : nil
        // In a paddled stretch (`paddleSpans`) every record is the boat's, but one counting a swim's strokes and one
        // with power or a running step (`ownTypes`' step test: a step of 0, or one the speed and cadence belie, is a
        // strap's, no run): those show a ride or a run, not a boat (their own types stand).
        if let types = own, !(types.strokes && record.totalCycles != nil), record.power == nil, !types.runningStep,
            inPaddledSpan(recordTime)
        {
            own = LegTypes(.paddleSports, pool: false)
        }
        if let own { recordPass.swim.advance(record, at: time, typedSwimming: own.strokes) }
        if let value = record.distance, case let firstValue = recordPass.distance.reference == nil,
            let (amount, from) = recordPass.distance.advance(to: value, at: time, previousRecord: previousRecord)
        {
            distribute(amount, from: from, to: time, into: &batch, own: own, firstValue: firstValue) { $0?.distance }
        }
        if let value = record.totalCycles, case let firstValue = recordPass.cycles.reference == nil,
            let (amount, from) = recordPass.cycles.advance(to: Double(value), at: time, previousRecord: previousRecord)
        {
            distribute(amount, from: from, to: time, into: &batch, own: own, firstValue: firstValue) {
                $0?.strokes == true ? .swimmingStrokeCount : nil
            }
        }
        // Older watches (920XT, 935, 735XT) count no strokes in an open-water swim's records, only
        // a stroke rate in `cadence` (strokes a minute): over the time since the record before,
        // it gives the strokes their SWOLF needs (the sum agrees with the laps' `total_cycles`
        // within 1 %: 953 of 953 strokes in the 920XT's swim, 2292 of 2294 in the 935's).
        if strokesFromCadence, let cadence = record.cadence, cadence > 0,
            let from = previousRecord, time > from,
            own.map(\.strokes) ?? (types(leg(at: time))?.strokes == true || types(leg(at: from))?.strokes == true)
        {
            // Smart recording leaves an open-water swim's records up to a minute apart (Kona:
            // 88 records in 3689 s); the timer's pauses count no strokes.
            let active = time - from - pausedOverlap(from, time)
            let strokes = (Double(cadence) + (record.fractionalCadence ?? 0)) * active / 60
            distribute(strokes, from: from, to: time, into: &batch, own: own) {
                $0?.strokes == true ? .swimmingStrokeCount : nil
            }
        }
        if inside {
            let legTypes = own ?? types(leg(at: time))
            if heartRateFromRecords, let heartRate = record.heartRate {
                batch.append(QuantitySample(.heartRate, Double(heartRate), at: date, source: device))
            }
            if let type = legTypes?.speed, let speed = record.speed {
                batch.append(QuantitySample(type, speed, at: date, source: device))
            }
            if let type = legTypes?.cadence, let cadence = record.cadence {
                let value = (Double(cadence) + (record.fractionalCadence ?? 0)) * (legTypes?.cadenceFactor ?? 1)
                batch.append(QuantitySample(type, value, at: date, source: device))
            }
            if let type = legTypes?.power, let power = record.power {
                batch.append(QuantitySample(type, Double(power), at: date, source: device))
            }
            if let type = legTypes?.stride, let step = record.stepLength {
                batch.append(QuantitySample(type, step, at: date, source: device))
            }
            if let latitude = record.positionLat, let longitude = record.positionLong {
                let point = RoutePoint(
                    date: date, latitude: Double(latitude) * (180 / 2_147_483_648),
                    longitude: Double(longitude) * (180 / 2_147_483_648), altitude: record.altitude,
                    speed: record.speed)
                routePointCount += 1
                add(.route([point]), at: time, rank: .data)
            }
        }
        if !batch.isEmpty {
            sampleCount += batch.count
            add(.samples(batch), at: time, rank: .data)
        }
    }

    /// Whether `time` lies in one of `paddledSpans` (records come in time order: the pass keeps its place).
    mutating func inPaddledSpan(_ time: Double) -> Bool {
        let spans = paddledSpans
        guard !spans.isEmpty else { return false }
        var index = recordPass.nextPaddledSpan
        while index < spans.count, spans[index].end < time { index += 1 }
        recordPass.nextPaddledSpan = index
        return index < spans.count && spans[index].start <= time
    }

    mutating func planRecords(_ records: SortedRecords) {
        for (recordTime, record) in records { planRecord(at: recordTime, record) }
        countsStepsOnly = false
        var distance = recordPass.distance
        var cycles = recordPass.cycles
        var tail: [QuantitySample] = []
        if let (amount, time) = distance.flush() {
            distribute(amount, from: time, to: time, into: &tail, own: nil) { $0?.distance }
        }
        if let (amount, time) = cycles.flush() {
            distribute(amount, from: time, to: time, into: &tail, own: nil) {
                $0?.strokes == true ? .swimmingStrokeCount : nil
            }
        }
        if let last = tail.last {
            sampleCount += tail.count
            add(.samples(tail), at: FITTime.seconds(last.end), rank: .data)
        }
        for counter in [distance, cycles] where counter.restarts > 0 {
            anomalies.append(
                ImportAnomaly(
                    .counterRestarted,
                    "the records' cumulative \(counter.name) went back to near zero \(counter.restarts) times (first at "
                        + "\(clockTime(counter.firstRestart ?? 0)), from \(seconds(counter.restartFrom ?? 0))"
                        + "\(counter.unit) to \(seconds(counter.restartTo ?? 0))\(counter.unit)); counted as restarts"))
        }
    }

    /// A cumulative counter of the records (distance, cycles): increments, restarts, jitter.
    struct CounterState {
        var name: String
        var unit: String
        var reference: Double?
        var time: Double?
        /// An amount not yet given out: the first value of the file, or the value after a restart,
        /// which goes with the next increment (so it lands in the leg that follows).
        var carry = 0.0
        var restarts = 0
        var firstRestart: Double?
        var restartFrom: Double?
        var restartTo: Double?

        init(name: String, unit: String) {
            self.name = name
            self.unit = unit
        }

        /// The amount added since the previous value and the time it counts from; nil when nothing
        /// is given out now.
        ///
        /// The first value counts from the previous record (any record), or goes with the next
        /// increment when it is the file's first record. A value below the reference by more than 1 %
        /// (and 1 unit) is a restart: the device restarts its counters with a new session, so the value
        /// counts from zero and goes with the next increment. A smaller step back is jitter and counts
        /// nothing (the reference stays).
        mutating func advance(to value: Double, at now: Double, previousRecord: Double?) -> (Double, Double)? {
            guard value.isFinite, value >= 0 else { return nil }
            let from = time ?? previousRecord ?? now
            time = now
            guard let previous = reference else {
                reference = value
                if from < now { return value > 0 ? (value, from) : nil }
                carry += value
                return nil
            }
            if value >= previous {
                reference = value
                let amount = value - previous + carry
                carry = 0
                return amount > 0 ? (amount, from) : nil
            }
            if previous - value > max(1, 0.01 * previous) {
                restarts += 1
                if firstRestart == nil {
                    firstRestart = now
                    restartFrom = previous
                    restartTo = value
                }
                reference = value
                carry += value
            }
            return nil
        }

        /// What is still carried, and when: given out as an instant at the last value's time.
        mutating func flush() -> (Double, Double)? {
            defer { carry = 0 }
            guard carry > 0, let time else { return nil }
            return (carry, time)
        }
    }

    /// What a record's readings are by themselves, without its session's sport (automatic
    /// segmentation): strokes counting up make a swim record; step length (running dynamics) a
    /// run; power without running dynamics a ride (a power meter). Anything else is movement
    /// without a sport sensor: with a cadence (a watch counting steps at the wrist) on foot, its
    /// distance walking; without one (the wrist is still on the handlebar) riding. That cadence
    /// itself is left out: a wrist's steps and a crank's turns look alike.
    /// Metres per cadence cycle below which a record without running dynamics is on foot (a
    /// stride is two steps: 2–3 m for most runners, about 3.7 m at elite marathon pace; a road
    /// bike's crank turn covers 4–9 m).
    static let longestStride = 4.0
    /// Whether a record looks like a running-mode watch counting arm strokes as steps: a cadence under
    /// `swimmersCadence` at a swimmer's pace, no power. (Asked only while the opening swim has shown no swim-mode
    /// record: `OpeningSwim.swimMode`.)
    static func armStrokesAsSteps(_ record: FITRecord) -> Bool {
        guard record.power == nil, let cadence = record.cadence, cadence > 0,
            Double(cadence) < swimmersCadence, let speed = record.speed, speed > 0
        else { return false }
        return speed < swimmersPace
    }

    /// A runner's longest stride (m, two steps) at a triathlon's run pace; a half stride above it is a watch on
    /// the handlebar counting.
    static let longestRunningStride = 3.0

    /// Whether a step length agrees (within 40 %) with the step the speed and cadence give: a strap's running
    /// dynamics left on through the bike repeat stale steps (a 735XT: 1.018 m at 6.3 m/s and 52 a minute).
    static func stepAgrees(_ step: Double, _ record: FITRecord) -> Bool {
        // Standing still is no run, whatever step the strap repeats.
        if record.speed == 0 { return false }
        guard let cadence = record.cadence, cadence > 0, let speed = record.speed, speed > 0 else { return true }
        let expected = speed * 60 / (2 * (Double(cadence) + (record.fractionalCadence ?? 0)))
        return step >= expected * 0.6 && step <= expected * 1.4
    }

    /// Speed (m/s) from which a cadence of 0 says the wrist is not stepping (`ownTypes`): slower, a standing
    /// athlete's watch reads 0 as well.
    static let slowestStride = 2.0
    /// The longest step (m) of running dynamics: a sprinter's; longer is no step.
    static let longestStep = 2.0
    /// Speed (m/s) under which a moving record is at a swimmer's pace (open-water swims: 0.6–1.3 m/s), slower than
    /// anyone walks out of the water.
    static let swimmersPace = 1.2
    /// Cadence (a minute) under which a record at a swimmer's pace counts arm strokes.
    static let swimmersCadence = 60.0
    /// Metres per cadence cycle a long stride and a short crank turn share (`ownTypes`).
    static let ambiguousStrides = 2.0..<5.0
    /// The fastest a person moves on foot (m/s): faster is riding.
    static let fastestOnFoot = 6.5
    /// Cadence (a minute) below which a record without power or running dynamics is a swim's
    /// stroke rate (`ownTypes`), while the swim that opens the file goes on (`OpeningSwim`).
    static let strokeRateBound = 45.0

    /// Whether the swim that opens a file goes on, for the stroke-rate rule of `ownTypes`.
    ///
    /// A stroke rate under `strokeRateBound` looks like a slow walk's strides in a transition, a
    /// crank turning slowly up a hill or a runner's few slow records: it makes a swim only while
    /// the swim a triathlon (or aquathlon) opens with goes on, never after it, and never once the
    /// athlete is out of the water. The swim is over once records that are surely not swimming
    /// (step length, power, or a cadence at or above `strokeRateBound`, not typed swimming by a
    /// stroke counter) have lasted `strokeRateEnd` seconds with no swim record between them: a
    /// stride or crank reading among the strokes (a 945's swim shows a cadence of 45 between
    /// strokes counting up) does not end it, the run out of the water to T1 does (the shared
    /// triathlons: 10–40 s after the device's T1 starts, before any of T1's slow steps or the
    /// bike's slow crank turns). So a recording must begin with its swim for the stroke rate to
    /// count: a later swim (swim-run-swim) is typed by its stroke counter or pool lengths only,
    /// and a ride or run recorded alone has at most its first few seconds' slow cadence read as
    /// a swim (none in the shared files).
    struct OpeningSwim {
        /// Whether the stroke-rate rule still applies.
        var goesOn = true
        /// When the current run of records surely not swimming began.
        var notSwimmingSince: Double?
        /// Whether a record of the swim came from a watch in swim mode (a stroke counter, or a stroke rate with no
        /// steps): then a slow stepping record is a walk out of the water, not arm strokes counted as steps.
        var swimMode = false

        /// Takes a record (typed by `ownTypes` with `goesOn`) into account.
        mutating func advance(_ record: FITRecord, at time: Double, typedSwimming: Bool) {
            guard goesOn else { return }
            if typedSwimming {
                notSwimmingSince = nil
                if record.totalCycles != nil || (record.stepLength == nil && !ImportPlanner.armStrokesAsSteps(record)) {
                    swimMode = true
                }
                return
            }
            // At a swimmer's pace (`swimmersPace`) neither a step length nor a cadence says the athlete is out
            // of the water while no swim-mode record came: a watch left in running mode counts arm strokes as steps.
            let armSteps = !swimMode && ImportPlanner.armStrokesAsSteps(record)
            let surelyNot =
                record.power != nil
                || (!armSteps
                    && (record.stepLength != nil
                        || record.cadence.map { Double($0) >= ImportPlanner.strokeRateBound } == true))
            guard surelyNot else { return }
            let since = notSwimmingSince ?? time
            notSwimmingSince = since
            if time - since >= ImportPlanner.strokeRateEnd { goesOn = false }
        }
    }

    // MARK: paddling

    /// A window of records (s) that shows a boat paddled (`paddleSpans`).
    static let paddleWindow = 600.0
    /// The speeds (m/s) the moving records of a paddled window hold (their median): faster than any swimmer holds for
    /// 10 minutes (open-water swims here: 1.2–1.4 m/s), slower than a bike rides on the level.
    static let paddlingSpeeds = 1.6...4.0
    /// The most a paddled window's altitudes differ (m): a boat stays on the water's level.
    static let paddlingLevel = 20.0
    /// The share of a window's moving records that must look paddled (`looksPaddled`).
    static let paddledShare = 0.6
    /// The speeds (m/s) of one record that looks paddled.
    static let paddleStrokeSpeeds = 1.5...4.5
    /// The shortest paddled stretch (s): twice the window. Shorter ones stay typed record by record (rides of 3–9
    /// minutes slowly on the level without a cadence sensor, a 310XT's open-water swim whose GPS jumps).
    static let shortestPaddle = 1200.0

    /// Whether one record looks like a paddled boat's: moving at `paddleStrokeSpeeds`, no power, no step length, no
    /// half stride, and a cadence of 0 or of strokes too long for strides (3 m a cycle and more:
    /// `longestRunningStride`).
    static func looksPaddled(_ record: FITRecord) -> Bool {
        guard let speed = record.speed, paddleStrokeSpeeds.contains(speed), record.power == nil,
            record.stepLength == nil, (record.fractionalCadence ?? 0) == 0
        else { return false }
        guard let cadence = record.cadence, cadence > 0 else { return true }
        return speed * 60 / Double(cadence) >= longestRunningStride
    }

    /// The longest the boat pushed off (`launching`) may last before a paddled stretch's first paddled record (s):
    /// the fenix 2's took 12 s. Without a bound a stretch began at its first window's first record, up to a whole
    /// window (600 s) of standing at the shore before the boat moved.
    static let longestLaunch = 60.0

    /// Whether a record before a paddled stretch's first is the boat pushed off: no faster than `paddleStrokeSpeeds`,
    /// no power, step length or half stride, and a cadence of 0 or a stroke rate (under `strokeRateBound`; a walk or a
    /// run counts more strides); at most `longestLaunch` before the first paddled record (`paddleSpans`).
    static func launching(_ record: FITRecord) -> Bool {
        guard (record.speed ?? 0) <= paddleStrokeSpeeds.upperBound, record.power == nil, record.stepLength == nil,
            (record.fractionalCadence ?? 0) == 0
        else { return false }
        return record.cadence.map { Double($0) < strokeRateBound } ?? true
    }

    /// The stretches of the records where a boat is paddled (automatic segmentation only): every window of
    /// `paddleWindow` seconds (slid by 10 s) with 20 records or more, at least half of them moving (1 m/s and more),
    /// whose moving records' median speed is in `paddlingSpeeds`, at least `paddledShare` of them `looksPaddled`, and
    /// whose altitudes (some record has one) lie within `paddlingLevel`; a stretch runs from such a window's first
    /// record that looks paddled to its last, overlapping stretches joined, a stretch's start moved back over the boat
    /// pushed off (`launching`, at most `longestLaunch`) and its end to where its strokes end (`strokesEnd`); a stretch
    /// shorter than `shortestPaddle` is none.
    ///
    /// A wrist in a kayak counts no strides and reads the strokes' rhythm now and then (a fenix 2: a cadence of 0 in
    /// 17–95 % of the records, else 30–127 a minute); without that window such records were riding (a cadence of 0
    /// at 2 m/s and more) and running by turns. What no other leg of the shared multisport files does for 10 minutes:
    /// the swims move at 1.2–1.4 m/s, the bikes without a cadence sensor that slowly climb (a Forerunner 935's
    /// 60–126 m in 10 minutes), the runs and walks count strides. Of the 44 shared files only the fenix 2's paddle
    /// (11,728 s) is such a stretch; the longest others, a Coros ride's 544 s and a 310XT swim's 764 s.
    static func paddleSpans(_ records: SortedRecords) -> [(start: Double, end: Double)] {
        guard let first = records.first?.time, let last = records.last?.time else { return [] }
        var spans: [(start: Double, end: Double)] = []
        var low = 0
        var speeds: [Double] = []
        var windowStart = first
        // Running counts of the window's records (`low..<high`), kept as records enter and leave it: only a window
        // they let pass (20 records, half moving, some and enough paddled) is scanned for its altitudes, median
        // speed and paddled records, so a file costs O(records) but for its paddled-looking stretches.
        // Per record: 1 moving (1 m/s and more), 2 moving and `looksPaddled`.
        var kinds = [UInt8](repeating: 0, count: records.count)
        var high = 0
        var moving = 0
        var paddledCount = 0
        while windowStart <= last {
            defer { windowStart += 10 }
            while low < records.count, records[low].time < windowStart {
                if low < high {
                    if kinds[low] >= 1 { moving -= 1 }
                    if kinds[low] == 2 { paddledCount -= 1 }
                }
                low += 1
            }
            // A gap in the records longer than a window (a device's clock set mid-file, a salvaged file) is
            // crossed at once, on the same 10 s grid: a window holding no record shows nothing.
            if low < records.count, records[low].time > windowStart + paddleWindow {
                windowStart += ((records[low].time - paddleWindow - windowStart) / 10).rounded(.down) * 10
            }
            high = Swift.max(high, low)
            while high < records.count, case let (time, record) = records[high], time <= windowStart + paddleWindow {
                if let speed = record.speed, speed >= 1 {
                    moving += 1
                    if looksPaddled(record) {
                        paddledCount += 1
                        kinds[high] = 2
                    } else {
                        kinds[high] = 1
                    }
                }
                high += 1
            }
            guard high - low >= 20, 2 * moving >= high - low, paddledCount > 0,
                Double(paddledCount) >= paddledShare * Double(moving)
            else { continue }
            var index = low
            var count = 0
            var lowAltitude = Double.infinity
            var highAltitude = -Double.infinity
            var paddled = 0
            var firstPaddled: (time: Double, index: Int)?
            var lastPaddled = 0.0
            speeds.removeAll(keepingCapacity: true)
            while index < records.count, case let (time, record) = records[index], time <= windowStart + paddleWindow {
                index += 1
                count += 1
                if let altitude = record.altitude {
                    lowAltitude = Swift.min(lowAltitude, altitude)
                    highAltitude = Swift.max(highAltitude, altitude)
                }
                guard let speed = record.speed, speed >= 1 else { continue }
                speeds.append(speed)
                if looksPaddled(record) {
                    paddled += 1
                    if firstPaddled == nil { firstPaddled = (time, index - 1) }
                    lastPaddled = time
                }
            }
            guard count >= 20, 2 * speeds.count >= count, let firstPaddled,
                Double(paddled) >= paddledShare * Double(speeds.count),
                highAltitude >= lowAltitude, highAltitude - lowAltitude <= paddlingLevel
            else { continue }
            speeds.sort()
            guard paddlingSpeeds.contains(speeds[speeds.count / 2]) else { continue }
            if let previous = spans.last, firstPaddled.time <= previous.end {
                spans[spans.count - 1].end = Swift.max(previous.end, lastPaddled)
            } else {
                // A new stretch begins with the boat pushed off: the window's records before its first paddled one
                // with strokes or none (a fenix 2: 0.6–2 m/s, a cadence of 0 or 42–43, for 12 s).
                var start = firstPaddled.index
                while start > low, records[start - 1].time >= firstPaddled.time - longestLaunch,
                    launching(records[start - 1].record)
                {
                    start -= 1
                }
                spans.append((records[start].time, lastPaddled))
            }
        }
        return spans.map { ($0.start, strokesEnd(records, from: $0.start, to: $0.end)) }.filter {
            $0.end - $0.start >= shortestPaddle && showsStrokes(records, from: $0.start, to: $0.end)
        }
    }

    /// Where a paddled stretch (`start`...`end`, its windows' last paddled-looking record) ends: at its last stroke (a
    /// record that looks paddled with a cadence above 0), or later at the last of the records right after it that look
    /// paddled, up to the first moving record (1 m/s and more) that does not; records standing still neither end nor
    /// extend it. `end` itself when the stretch counts no stroke.
    ///
    /// A window reaching into the next leg still holds `paddledShare` paddled-looking records up to 4 minutes in (5 when
    /// a wrist reads a cadence of 0 in one run record of five: such a record is no stride), so the stretch used to end
    /// at the last of those, minutes into a run. A wrist in a kayak reads the strokes' rhythm only now and then (the
    /// fenix 2's last stroke lies 39 s before the lap press, its records between at 2.2 m/s with a cadence of 0): the
    /// records after the last stroke are the boat's until one shows another sport (a stride, a step, power, a speed no
    /// paddle holds).
    static func strokesEnd(_ records: SortedRecords, from start: Double, to end: Double) -> Double {
        // The first record after `end`.
        var low = 0
        var high = records.count
        while low < high {
            let middle = (low + high) / 2
            if records[middle].time <= end { low = middle + 1 } else { high = middle }
        }
        var index = low - 1
        while index >= 0, case (let time, let record) = records[index], time >= start {
            if (record.cadence ?? 0) > 0, looksPaddled(record) { break }
            index -= 1
        }
        guard index >= 0, records[index].time >= start else { return end }
        var stretchEnd = records[index].time
        index += 1
        while index < low, case (let time, let record) = records[index] {
            index += 1
            if looksPaddled(record) {
                stretchEnd = time
            } else if (record.speed ?? 0) >= 1 {
                break
            }
        }
        return stretchEnd
    }

    /// The share of a paddled stretch's moving records that must count strokes (`showsStrokes`).
    static let strokedShare = 0.05

    /// Whether a paddled stretch shows strokes, not only the absence of strides: at least `strokedShare` of its
    /// moving records (1 m/s and more) look paddled with a cadence above 0 (strokes of 3 m and more a cycle). A run
    /// or a ride recorded without any cadence (a watch without a foot pod or a cadence sensor, on the flat at
    /// 1.6–4 m/s) looks paddled record by record but never counts a stroke; a wrist in a kayak does now and then
    /// (the fenix 2's paddle reads the strokes' rhythm between its records of cadence 0).
    static func showsStrokes(_ records: SortedRecords, from start: Double, to end: Double) -> Bool {
        var moving = 0
        var stroked = 0
        for (time, record) in records where time >= start && time <= end {
            guard let speed = record.speed, speed >= 1 else { continue }
            moving += 1
            if (record.cadence ?? 0) > 0, looksPaddled(record) { stroked += 1 }
        }
        return moving > 0 && Double(stroked) >= strokedShare * Double(moving)
    }

    /// Seconds of records surely not swimming that end the opening swim (`OpeningSwim`).
    static let strokeRateEnd = 10.0

    static func ownTypes(
        _ record: FITRecord, previousCycles: Double?, swimGoesOn: Bool, swimMode: Bool = false,
        lastOnFoot: inout Bool?
    ) -> LegTypes {
        if let cycles = record.totalCycles, let previous = previousCycles, Double(cycles) > previous {
            return LegTypes(.swimming, pool: false)
        }
        // A stroke rate: an older watch's open-water swim records count no strokes, only their
        // rate in `cadence` (26–37 a minute on the 920XT, 935, 945 and 735XT); on foot a watch
        // counts 48 strides a minute and more, a crank turns 60–110 times (a power meter or
        // running dynamics say which). Below `strokeRateBound` without either, a swim, but only
        // while the swim that opens the file goes on (`OpeningSwim`): after it, a slow walk or
        // crank (T1, a climb, a run's slow records) is none.
        if swimGoesOn, let cadence = record.cadence, cadence > 0, Double(cadence) < Self.strokeRateBound,
            record.power == nil, record.stepLength == nil
        {
            return LegTypes(.swimming, pool: false)
        }
        // A watch left in running mode through the swim counts arm strokes as steps (a 735XT: cadence 39–56,
        // "steps" of 0.3–0.6 m, at 0.6–0.9 m/s): a cadence under `swimmersCadence` at a swimmer's pace, slower
        // than anyone walks a race, is a swim too while the opening swim goes on.
        if swimGoesOn, !swimMode, Self.armStrokesAsSteps(record) { return LegTypes(.swimming, pool: false) }
        // Without running dynamics, the metres covered per cadence cycle tell feet from a crank: a
        // runner's stride (two steps) stays under `longestStride`, a crank turn in any road gear
        // goes further. (A Forerunner 255/955 measures running power at the wrist: power alone is
        // no bike.)
        // Between a long stride and a short crank turn (`ambiguousStrides`: a runner's 3.7 m at elite pace, a
        // bike's low gear on a climb) the record keeps the gait of the last record outside that band, as a climb
        // on the bike or a fast stretch of the run goes on: a Kona bike's climbs turn 3.9–4.1 m at 95–108 rpm with
        // its power meter, for minutes. Faster than `fastestOnFoot` is no stride.
        var onFoot: Bool?
        if let cadence = record.cadence, cadence > 0, let speed = record.speed, speed > 0, speed.isFinite {
            let cadenceValue = Double(cadence) + (record.fractionalCadence ?? 0)
            let metres = speed * 60 / cadenceValue
            // A half stride (`fractional_cadence`: an odd count of steps a minute) is a watch counting steps:
            // a crank sensor counts whole turns (none in the 16,253 cadence readings of Kona's bike, half in the
            // runs of every multisport file here).
            let halfStride = (record.fractionalCadence ?? 0) > 0
            // (A crank turn of 5 m and more, or a speed no runner holds, outweighs a half stride: a strap's
            // running dynamics go on counting "steps" on the bike, 43.5 a minute at 4.6–4.9 m/s.)
            let crank = speed > Self.fastestOnFoot || metres >= Self.ambiguousStrides.upperBound
            let unambiguous =
                crank || (halfStride && metres < Self.longestRunningStride) || metres < Self.ambiguousStrides.lowerBound
            if crank {
                onFoot = false
            } else if unambiguous {
                onFoot = true
            } else {
                onFoot = lastOnFoot ?? (metres < Self.longestStride)
            }
            if unambiguous { lastOnFoot = onFoot }
        } else if let speed = record.speed, speed > Self.fastestOnFoot {
            onFoot = false
        }
        // Running dynamics: a step length of a step (`longestStep` at most) on foot makes a run; a "step" longer
        // than any runner's, or of 0, is a strap on the bike.
        if let step = record.stepLength, step > 0, step <= Self.longestStep, onFoot != false,
            Self.stepAgrees(step, record)
        {
            var types = LegTypes(.running, pool: false)
            types.runningStep = true
            return types
        }
        if record.power != nil { return LegTypes(onFoot == true ? .running : .cycling, pool: false) }
        // A cadence of 0 while moving is no stride: a wrist on the handlebar, or pushing the bike through a
        // transition zone (a Forerunner 945: 2.2–3.3 m/s with a cadence of 0 for 50 s, then the rack).
        let strides = record.cadence.map { $0 > 0 || (record.speed ?? 0) < Self.slowestStride } ?? false
        var types = LegTypes(strides && onFoot != false ? .walking : .cycling, pool: false)
        types.cadence = nil
        types.speed = nil
        types.stride = nil
        return types
    }

    /// Where leg `index`'s share of the records' counters begins (`planCounterStarts`).
    func counterStart(_ index: Int) -> Double {
        index < counterStarts.count ? counterStarts[index] : legStarts[index]
    }

    /// Decides, once per leg change, where the records' cumulative counters (distance, strokes)
    /// pass from one leg to the next: at the next leg's start second, or the whole second before.
    ///
    /// Devices differ and nothing in a record says which: a Forerunner 945, 255 or 935 closes a
    /// leg with its counters as its last once-a-second update left them, the second before the next
    /// session's `start_time` (the 920XT's smart-recorded T1 ends on the line between two records
    /// 3 s apart, at that second); a fenix 6S, and our own exporter, close it with the record at the
    /// next leg's start. The file states each leg's totals (session `total_distance`, else
    /// `total_cycles`): the cut whose leg total, from the previous leg's cut on (from zero for the
    /// first leg), comes nearer the
    /// stated one is taken; a tie, or a leg stating no total (above zero), keeps the exact cut at
    /// the next leg's start. A cut never goes before the previous leg's start.
    mutating func planCounterStarts(_ records: SortedRecords) {
        counterStarts = legStarts
        guard legStarts.count > 1 else { return }
        for index in 1..<legStarts.count {
            let exact = legStarts[index]
            let early = max(legStarts[index - 1], exact - 1)
            guard early < exact, let session = legs[index - 1].session, session < sessions.count else { continue }
            let summary = sessions[session]
            let value: (FITRecord) -> Double?
            let stated: Double
            if let distance = summary.totalDistance, distance > 0, distance.isFinite {
                (value, stated) = ({ $0.distance }, distance)
            } else if let cycles = summary.totalCycles, cycles > 0 {
                (value, stated) = ({ $0.totalCycles.map(Double.init) }, Double(cycles))
            } else {
                continue
            }
            // The first leg holds the counter's first value (all it counted before the records showed it).
            guard let start = index == 1 ? 0 : Self.counterValue(records, at: counterStarts[index - 1], value),
                let atExact = Self.counterValue(records, at: exact, value),
                let atEarly = Self.counterValue(records, at: early, value)
            else { continue }
            if abs(atEarly - start - stated) < abs(atExact - start - stated) { counterStarts[index] = early }
        }
    }

    /// A cumulative counter's value at `time` as the records show it: on the straight line between
    /// the nearest records carrying it (within 64 records either side), the last one's value after
    /// them, zero before the first; nil when no record near enough before `time` carries it.
    static func counterValue(_ records: SortedRecords, at time: Double, _ value: (FITRecord) -> Double?) -> Double? {
        // The first record after `time`.
        var low = 0
        var high = records.count
        while low < high {
            let mid = (low + high) / 2
            if records[mid].time <= time { low = mid + 1 } else { high = mid }
        }
        let window = 64
        var before: (time: Double, value: Double)?
        var position = low - 1
        while position >= max(0, low - window) {
            let (recordTime, record) = records[position]
            if let reading = value(record), reading.isFinite {
                before = (recordTime, reading)
                break
            }
            position -= 1
        }
        guard let before else { return position < 0 ? 0 : nil }
        if before.time >= time { return before.value }
        position = low
        while position < min(records.count, low + window) {
            let (recordTime, record) = records[position]
            if let reading = value(record), reading.isFinite {
                guard reading >= before.value, recordTime > before.time else { return before.value }
                return before.value + (reading - before.value) * (time - before.time) / (recordTime - before.time)
            }
            position += 1
        }
        return before.value
    }

    /// The leg whose counters' share holds `time` (see `counterStart`).
    func counterLeg(at time: Double) -> Int? {
        guard let first = legStarts.first, time >= first else { return nil }
        // The counter starts never go back (the legs' starts do not): the last one at or before `time`.
        var low = 1
        var high = legStarts.count
        while low < high {
            let mid = (low + high) / 2
            if counterStart(mid) <= time { low = mid + 1 } else { high = mid }
        }
        return low - 1
    }

    /// Splits an amount accumulated over [from, to] at the legs' counter changes (`counterStart`)
    /// and types each part by its leg (or every part by `own`, the record's own types).
    ///
    /// A leg's part is dated inside the leg (a part counted for a leg just before its start is
    /// dated at its start), so that the builder gives it to that leg. A counter's first value
    /// (`firstValue`: all it counted before the records showed it) has no second of its own: it is
    /// split at the legs' starts.
    mutating func distribute(
        _ amount: Double, from: Double, to: Double, into batch: inout [QuantitySample], own: LegTypes?,
        firstValue: Bool = false, type: (LegTypes?) -> QuantityType?
    ) {
        guard amount > 0, amount.isFinite else { return }
        if to <= from {
            guard isInside(to), let quantityType = type(own ?? types(leg(at: to))) else { return }
            batch.append(QuantitySample(quantityType, amount, at: FITTime.date(to), source: device))
            return
        }
        let low = max(from, workoutStart)
        let high = min(to, workoutEnd)
        guard high > low else { return }
        // One leg, or legs hidden from readings typed by themselves: one part (most files; the
        // per-record path).
        if own != nil || legStarts.count < 2 {
            guard let quantityType = type(own ?? types(leg(at: low))) else { return }
            batch.append(
                QuantitySample(
                    quantityType, amount * (high - low) / (to - from), at: FITTime.date(low), end: FITTime.date(high),
                    source: device))
            return
        }
        guard var leg = firstValue ? leg(at: low) : counterLeg(at: low) else { return }
        var a = low
        while true {
            let next =
                leg + 1 < legStarts.count ? (firstValue ? legStarts[leg + 1] : counterStart(leg + 1)) : Double.infinity
            let b = min(next, high)
            if b > a, let quantityType = type(types(leg)) {
                let share = amount * (b - a) / (to - from)
                let (start, end) = (max(a, legStarts[leg]), max(b, legStarts[leg]))
                batch.append(
                    end > start
                        ? QuantitySample(
                            quantityType, share, at: FITTime.date(start), end: FITTime.date(end), source: device)
                        : QuantitySample(quantityType, share, at: FITTime.date(start), source: device))
            }
            guard next < high else { return }
            a = max(a, b)
            leg += 1
        }
    }

    // MARK: heart beats

    /// Beats further than this (bpm) from a record's reading say the record read another sensor: a record of
    /// the strap itself lies within 6 bpm of its last beat (689 records of five files), a wrist reading beside
    /// it 39–100 bpm away (docs/device-conventions-round2.md).
    static let otherSensorDifference = 20

    /// Which records read another sensor than the strap whose stored beats (`hr` messages) cover them.
    ///
    /// A watch replaces a swim's live heart rate with the strap's memory (the wrist reads badly
    /// underwater), but out of the water its figures follow its live reading: where a record's reading
    /// differs from the strap's last beat (within the SDK's 5 s carry) by more than
    /// `otherSensorDifference`, the watch was reading another sensor (the wrist, before the strap
    /// reconnected): that record keeps its reading, and it holds to the next record with heart rate,
    /// where the strap's beats are left out. Where the records are the strap's own readings, its beats
    /// stay (its once-a-second values between smart-recorded records). Sets `otherSensorRecords` and
    /// `otherSensorSpans`; import only.
    mutating func planHeartRateSources(_ records: SortedRecords) {
        guard !recordBeatTimes.isEmpty else { return }
        let beats = file.heartBeats.sorted { $0.time < $1.time }
        var next = 0
        var open: (start: Double, value: Double)?
        for position in records.indices {
            let (time, record) = records[position]
            guard let heartRate = record.heartRate else { continue }
            while next < beats.count, beats[next].time <= time { next += 1 }
            let strapNear = next > 0 && time - beats[next - 1].time <= Self.strapCarry
            let other =
                strapNear && abs(Int(heartRate) - Int(beats[next - 1].bpm)) > Self.otherSensorDifference
                && leg(at: time).map { legs[$0].sport != FITProfile.Sport.swimming } == true
            if let (start, value) = open {
                otherSensorSpans.append((start, time, value, strapNear && !other))
                open = nil
            }
            guard other else { continue }
            otherSensorRecords.insert(time)
            open = (time, Double(heartRate))
        }
        if let (start, value) = open { otherSensorSpans.append((start, max(start, workoutEnd), value, false)) }
    }

    /// Heart beats of `hr` messages (a swim strap's memory) merged into the timeline by time, a
    /// second's beats delivered together as a live strap would.
    ///
    /// They join the records' heart rate as one stream of the device (Garmin's SDK merges them into
    /// the records' `heart_rate`): the engine counts two sources of one type side by side, so a
    /// strap's stream beside the records' would count both where they meet. Beats where a record
    /// read another sensor (`planHeartRateSources`) are left out and counted.
    mutating func planHeartBeats() {
        guard !file.heartBeats.isEmpty else { return }
        let beats = file.heartBeats.sorted { $0.time < $1.time }
        var batch: [QuantitySample] = []
        var batchSecond = -Double.infinity
        var before = 0
        var besideOtherSensor = 0
        var span = 0
        let spans = otherSensorSpans
        func flush(_ planner: inout ImportPlanner, _ batch: inout [QuantitySample]) {
            guard let last = batch.last else { return }
            planner.sampleCount += batch.count
            planner.add(.samples(batch), at: FITTime.seconds(last.start), rank: .data)
            batch.removeAll()
        }
        // The other sensor's reading holds to the strap's first beat after it: a repeat of it there, so that
        // the straight line of smart recording does not run from one sensor's reading to the other's.
        var stepBack: (end: Double, value: Double)?
        for beat in beats {
            while span < spans.count, spans[span].end <= beat.time {
                stepBack = spans[span].strapFollows ? (spans[span].end, spans[span].value) : nil
                span += 1
            }
            if span < spans.count, spans[span].start <= beat.time {
                besideOtherSensor += 1
                continue
            }
            let date = FITTime.date(beat.time)
            let sample = QuantitySample(.heartRate, Double(beat.bpm), at: date, source: device)
            if beat.time < workoutStart {
                before += 1
            } else if beat.time > workoutEnd {
                if beat.time <= workoutEnd + Self.recoveryWindow { recovery.append(sample) }
            } else {
                let second = beat.time.rounded(.down)
                if second != batchSecond {
                    flush(&self, &batch)
                    batchSecond = second
                }
                if let (end, value) = stepBack, beat.time - end <= Self.strapCarry {
                    batch.append(QuantitySample(.heartRate, value, at: date, source: device))
                }
                stepBack = nil
                batch.append(sample)
            }
        }
        flush(&self, &batch)
        if besideOtherSensor > 0 {
            anomalies.append(
                ImportAnomaly(
                    .heartBeatsBesideOtherSensor,
                    "\(plural(besideOtherSensor, "heart beat")) of hr messages lie where the records read another sensor "
                        + "out of the water (the device's figures follow the records there) and were not imported"))
        }
        if before > 0 {
            anomalies.append(
                ImportAnomaly(
                    .recordsOutsideSessions,
                    "\(plural(before, "heart beat")) of hr messages came before the first session (the strap was on earlier) "
                        + "and were not imported"))
        }
    }

    // MARK: laps

    /// The device's laps become lap events, except in pool swims (their lengths are the laps) and a
    /// session's only lap (it is the session itself).
    mutating func planLaps() {
        var byLeg: [Int: [(start: Double, end: Double)]] = [:]
        for lap in file.laps {
            guard let start = lap.startTime.map(Double.init),
                let duration = lap.totalElapsedTime ?? lap.totalTimerTime, duration > 0
            else { continue }
            guard let leg = leg(at: start + 0.5), !legs[leg].isPool else { continue }
            byLeg[leg, default: []].append((start, start + duration))
        }
        var clipped = 0
        for leg in byLeg.keys.sorted() {
            guard var laps = byLeg[leg], laps.count > 1 else { continue }
            laps.sort { $0.start < $1.start }
            var previousEnd = legStarts[leg]
            for lap in laps {
                let start = max(lap.start, previousEnd)
                let end = min(lap.end, legEnds[leg])
                if end < lap.end - 1 || start > lap.start + 1 { clipped += 1 }
                guard end > start else { continue }
                previousEnd = end
                add(
                    .events([WorkoutEvent(type: .lap, start: FITTime.date(start), duration: end - start)]), at: end,
                    rank: .data)
            }
        }
        if clipped > 0 {
            anomalies.append(
                ImportAnomaly(
                    .eventsClipped,
                    "\(plural(clipped, "lap")) of the device reached outside its session (cut at its bounds)"))
        }
    }
}
