import Foundation
import Testing
import WorkoutEngine
@testable import WorkoutFormats
import WorkoutModel
import WorkoutReplay

/// Issue 26: the multisport recordings of ../shared/data agree with what their devices computed.
@Suite("Multisport device conventions on real recordings")
struct MultisportConventionTests {
    func sessions(_ name: String) throws -> [DeviceValues] {
        let device = DeviceValues(object: try SharedData.expected(name)["device"] as? [String: Any] ?? [:])
        return device.list("sessions").sorted { ($0.string("start_time") ?? "") < ($1.string("start_time") ?? "") }
    }

    /// A swim strap's stored beats (`hr` messages in chained FIT files) cover the swim and a little
    /// around it; the records carry the heart rate of every leg after it. Every leg keeps its heart
    /// rate and averages within 1 bpm of the device's: the bike, T2 and run (the records' heart
    /// rate alone, which the import used to drop) and T1 (the 935's wrist readings beside the
    /// strap's beats: `aRecordReadingAnotherSensorOutOfTheWaterKeepsItsReading`).
    @Test(arguments: ["sl_6788312639-1", "tl_ObertrumTriathlon", "cs_track_cs_1451", "fp_sample_mulitple_header"])
    func noLegLosesItsHeartRate(name: String) async throws {
        let result = try await ImportedFiles.shared.result(name)
        let device = try sessions(name)
        try #require(result.workout.activities.count == device.count)
        for (index, (activity, session)) in zip(result.workout.activities, device).enumerated() {
            let average = try #require(session.double("avg_heart_rate"))
            let ours = activity.statistics[.heartRate]?.average?.value
            #expect(ours != nil, "leg \(index + 1) has no heart rate")
            #expect(abs((ours ?? 0) - average) <= 1, "leg \(index + 1): \(ours ?? 0) vs \(average)")
        }
    }

    /// Out of the water a watch's figures follow its live reading: the 935's T1 records read the
    /// wrist (68–72 bpm, 1491–1499 s, and 121 at 1690 s) while the strap, not yet reconnected,
    /// stored 159–168 beside them; the device's T1 averages 148, its records held to the next
    /// reading 148.5, the strap's beats 152.0. The records reading another sensor keep their
    /// reading to the next record with heart rate (the strap's 52 beats there are left out and
    /// counted), and where the records are the strap's own readings its beats stay: T1 148.3.
    @Test func aRecordReadingAnotherSensorOutOfTheWaterKeepsItsReading() async throws {
        let name = "cs_track_cs_1451"
        let file = try FITDecoder.decode([UInt8](try SharedData.data(name)))
        let start = try #require(file.sessions.compactMap(\.startTime).min())
        // The evidence, from the file: T1's first records read far below the strap's beats.
        let wrist = file.records.filter {
            guard let time = $0.timestamp, let heartRate = $0.heartRate else { return false }
            return time >= start + 1490 && time < start + 1504 && heartRate < 100
        }
        #expect(wrist.count == 5)
        let beats = file.heartBeats.filter { $0.time >= Double(start) + 1490 && $0.time < Double(start) + 1504 }
        #expect(!beats.isEmpty && beats.allSatisfy { $0.bpm > 150 })
        let result = try await ImportedFiles.shared.result(name)
        let transition = try #require(result.workout.activities.count == 5 ? result.workout.activities[1] : nil)
        let device = try #require(try sessions(name)[1].double("avg_heart_rate"))
        let heartRate = try #require(transition.statistics[.heartRate])
        #expect(abs((heartRate.average?.value ?? 0) - device) <= 1, "\(heartRate.average?.value ?? 0) vs \(device)")
        #expect(heartRate.maximum?.value == 171)
        #expect(result.anomalies.contains { $0.kind == .heartBeatsBesideOtherSensor && $0.detail.hasPrefix("52 ") })
        // The swim (wrist readings beside the strap in the water) still follows the strap: 945 and 935.
        let swim = try #require(result.workout.activities.first)
        let swimDevice = try #require(try sessions(name)[0].double("avg_heart_rate"))
        #expect(abs((swim.statistics[.heartRate]?.average?.value ?? 0) - swimDevice) <= 1)
    }

    /// The merge keeps each record's own reading only where no strap beat lies in its interval, as
    /// Garmin's SDK merges them: the swim of the Forerunner 945 (wrist readings in every record, the
    /// strap's beats beside them) follows the strap, 158 bpm, not the wrist.
    @Test func theStrapsBeatsReplaceTheWristWhereTheyCoverIt() async throws {
        let name = "sl_6788312639-1"
        let result = try await ImportedFiles.shared.result(name)
        let swim = try #require(result.workout.activities.first)
        let device = try #require(try sessions(name).first?.double("avg_heart_rate"))
        let ours = try #require(swim.statistics[.heartRate]?.average?.value)
        #expect(abs(ours - device) <= 1, "\(ours) vs \(device)")
        #expect(swim.statistics[.heartRate]?.maximum?.value == 170)
    }

    /// The strap's beats carry 5 s across a gap (as Garmin's SDK merges them): a record whose
    /// second holds no beat inside that carry keeps to the strap, so the 735XT's reading at T1's
    /// first second (169 bpm, a 1.5 s gap in the beats) does not hold into T1 beside the beats:
    /// T1 averages 155.7 for the device's 156 (158.0 with it).
    @Test func aGapOfAFewSecondsInTheStrapsBeatsLetsNoRecordIn() async throws {
        let name = "tl_ObertrumTriathlon"
        let result = try await ImportedFiles.shared.result(name)
        let transition = try #require(result.workout.activities.count == 5 ? result.workout.activities[1] : nil)
        let device = try #require(try sessions(name)[1].double("avg_heart_rate"))
        let heartRate = try #require(transition.statistics[.heartRate])
        #expect(abs((heartRate.average?.value ?? 0) - device) <= 1, "\(heartRate.average?.value ?? 0) vs \(device)")
        // One stream covers the leg: no reading held beside the strap's.
        #expect(heartRate.coveredTime <= transition.duration + 1, "\(heartRate.coveredTime) of \(transition.duration) s")
    }

    /// The Forerunner 965's second swim: an idle length of 131,064.7 s (longer than the 998 s swim)
    /// ends where the next length starts, so the 16 active lengths (400 m) after it count.
    @Test func aLengthLongerThanItsSessionDoesNotHideTheLengthsAfterIt() async throws {
        let name = "gdb_22638574127_ACTIVITY"
        let result = try await ImportedFiles.shared.result(name)
        let row = try #require(result.comparison?.rows.first { $0.kind == .session && $0.number == 5 })
        #expect(row.device.activeLengths == 16)
        #expect(row.ours.activeLengths == 16)
        #expect(row.ours.distance == 400)
        #expect(abs((row.ours.timerTime ?? 0) - (row.device.timerTime ?? 0)) <= 1)
        #expect(abs((row.ours.swolf ?? 0) - (row.device.swolf ?? 0)) <= 1, "\(row.ours.swolf ?? 0)")
        #expect(result.anomalies.contains { $0.detail.contains("longer than their whole session") })
    }

    /// Heart rate recorded live (the Forerunner 965's wrist, in the records) averages over the
    /// timer, rests in: 139 bpm over its first swim (over the lengths swum it would be 143.7).
    @Test func livePoolHeartRateAveragesOverTheTimer() async throws {
        let name = "gdb_22638574127_ACTIVITY"
        let result = try await ImportedFiles.shared.result(name)
        let swim = try #require(result.workout.activities.first)
        let device = try #require(try sessions(name).first?.double("avg_heart_rate"))
        let ours = try #require(swim.statistics[.heartRate]?.average?.value)
        #expect(abs(ours - device) <= 1, "\(ours) vs \(device)")
    }

    /// Older watches count no strokes in an open-water swim's records, only a stroke rate
    /// (`cadence`): its time integral gives the strokes, and (seconds + strokes) per 25 m the SWOLF
    /// the device wrote, per session and per lap.
    @Test(arguments: [
        "fp_sample_mulitple_header", "cs_track_cs_1451", "sl_20181013_kona_ironman", "tl_ObertrumTriathlon",
    ])
    func openWaterSWOLFFromTheStrokeRate(name: String) async throws {
        let result = try await ImportedFiles.shared.result(name)
        let swim = try #require(result.workout.activities.first)
        let session = try #require(try sessions(name).first)
        let swolf = try #require(session.double("avg_swolf"))
        let ours = try #require(swim.statistics[.swimmingSWOLF]?.average?.value)
        #expect(abs(ours - swolf) <= 1, "\(ours) vs \(swolf)")
        let strokes = try #require(session.double("total_cycles"))
        let ourStrokes = try #require(swim.statistics[.swimmingStrokeCount]?.sum?.value)
        #expect(abs(ourStrokes - strokes) <= 0.02 * strokes, "\(ourStrokes) vs \(strokes)")
        let laps = try #require(result.comparison?.rows.filter { $0.kind == .lap && $0.device.swolf != nil })
        #expect(!laps.isEmpty)
        for lap in laps where (lap.device.distance ?? 0) >= 100 {
            let device = try #require(lap.device.swolf)
            #expect(abs((lap.ours.swolf ?? 0) - device) <= 1, "lap \(lap.number): \(lap.ours.swolf ?? 0) vs \(device)")
        }
    }

    /// A heart-rate reading at the next leg's whole-second start belongs to the next leg, even where
    /// the leg before ends a fraction of a second after it. The three boundaries of the shared files
    /// where the record at that second lies inside both legs' spans and decides a maximum all say so:
    /// the 920XT's T2 (starts 6579 s, the bike ends 6579.14 s) reaches its 169 bpm only with the
    /// reading at 6579 s (168 without); the 735XT's T1 (894 s, the swim ends 894.48 s) reaches its
    /// 169 only with the reading at 894 s (168 without); Kona's swim (ends 3688.6 s) states 112 while
    /// the reading at T1's start second 3688 s is 115: the swim did not take it. The device's own
    /// time in zone agrees (Kona's swim: 12 s of heart rate, 3676–3687 s; docs/device-conventions-round2.md).
    @Test(arguments: [("fp_sample_mulitple_header", 3), ("tl_ObertrumTriathlon", 1), ("sl_20181013_kona_ironman", 1)])
    func aReadingAtTheNextLegsStartSecondIsTheNextLegs(name: String, next: Int) async throws {
        let file = try FITDecoder.decode([UInt8](try SharedData.data(name)))
        let legs = file.sessions.sorted { ($0.startTime ?? 0) < ($1.startTime ?? 0) }
        try #require(legs.count > next)
        let before = legs[next - 1]
        let after = legs[next]
        let start = try #require(after.startTime)
        let end = Double(try #require(before.startTime)) + (before.totalElapsedTime ?? 0)
        // The record at the next leg's start second lies inside the leg before too.
        #expect(Double(start) < end, "\(start) vs \(end)")
        let reading = try #require(file.records.first { $0.timestamp == start && $0.heartRate != nil }?.heartRate)
        let readings = { (from: UInt32, to: Double) in
            file.records.filter { record in
                guard let time = record.timestamp, record.heartRate != nil else { return false }
                return time >= from && Double(time) < to && time != start
            }.compactMap(\.heartRate)
        }
        let beforeMaximum = try #require(readings(before.startTime ?? 0, end).max())
        let afterMaximum = try #require(readings(start, Double(start) + (after.totalElapsedTime ?? 0)).max())
        let result = try await ImportedFiles.shared.result(name)
        let rows = try #require(result.comparison?.rows.filter { $0.kind == .session }.sorted { $0.number < $1.number })
        try #require(rows.count == legs.count)
        let deviceBefore = try #require(before.maxHeartRate)
        let deviceAfter = try #require(after.maxHeartRate)
        if reading > afterMaximum {
            // The next leg's maximum is this reading: the device gave it to the next leg, and so do we.
            #expect(deviceAfter == reading)
            #expect(rows[next].ours.maximumHeartRate == Double(reading))
        } else {
            // The leg before would have this reading as its maximum: the device's is lower, and so is ours.
            #expect(reading > beforeMaximum)
            #expect(deviceBefore < reading)
            #expect((rows[next - 1].ours.maximumHeartRate ?? 0) < Double(reading))
        }
    }

    /// Kona's swim: the device's maximum, 112 bpm, is no reading of the file. Its records read 110 at
    /// 3683–3684 s and 115 at 3688 s (T1's start second, where the swim's 3688.6 s end; the device's
    /// T1 starts there), nothing between, and no strap beat: `--compare` says so. A value a record
    /// does read (110, 115) is not explained away, and the 965's T2 distance, which its records
    /// stop 4.5 s short of, is.
    @Test func aFigureNoMessageHoldsIsExplainedFromTheFile() async throws {
        let name = "sl_20181013_kona_ironman"
        let file = try FITDecoder.decode([UInt8](try SharedData.data(name)))
        let swim = try #require(file.sessions.min { ($0.startTime ?? 0) < ($1.startTime ?? 0) })
        let reason = try #require(FITComparison.maximumNotInFile(file, swim, maximum: 112))
        #expect(reason.contains("reads 112 bpm"), "\(reason)")
        #expect(FITComparison.maximumNotInFile(file, swim, maximum: 110) == nil)
        #expect(FITComparison.maximumNotInFile(file, swim, maximum: 115) == nil)
        let result = try await ImportedFiles.shared.result(name)
        #expect(result.comparison?.notInFile.map { "\($0.session) \($0.check)" } == ["1 max HR"])
        let pool = try await ImportedFiles.shared.result("gdb_22638574127_ACTIVITY")
        let distance = try #require(pool.comparison?.notInFile.first { $0.check == "distance" })
        #expect(distance.session == 4)
        #expect(
            distance.reason.contains("to 6559.80 m") && distance.reason.contains("4.5 s before the session's end"),
            "\(distance.reason)")
    }

    /// A device closes a leg with its distance counter as its last once-a-second update left it,
    /// the second before the next leg's whole-second start: every transition, down to the Kona
    /// T2's 3.36 m, agrees within 0.5 % of the device's (the 920XT's smart-recorded T1 ends on the
    /// line between two records 3 s apart; the fenix 3 stops its timer at each leg change).
    @Test(arguments: [
        "fp_sample_mulitple_header", "sl_6788312639-1", "sl_20181013_kona_ironman", "mk_triathlon_summary_last",
        "rz_Multisession-stop-after-transition", "tl_ObertrumTriathlon",
    ])
    func aLegsDistanceEndsAtTheSecondBeforeTheNextLegStarts(name: String) async throws {
        let result = try await ImportedFiles.shared.result(name)
        let device = try sessions(name)
        let rows = try #require(result.comparison?.rows.filter { $0.kind == .session })
        try #require(rows.count == device.count)
        var transitions = 0
        for (row, session) in zip(rows.sorted { $0.number < $1.number }, device) {
            // A leg the device gives no distance (the Obertrum T2's 2 s) is not a check (as in `--compare`).
            guard let distance = session.double("total_distance"), distance > 0 else { continue }
            let ours = try #require(row.ours.distance, "session \(row.number)")
            #expect(abs(ours - distance) <= 0.005 * distance, "session \(row.number): \(ours) vs \(distance)")
            if row.sport == "transition" { transitions += 1 }
        }
        #expect(transitions >= 1)
    }
}

/// Issue 26: automatic segmentation (`--auto-segment`) of the multisport recordings, against the device's sessions.
@Suite("Automatic segmentation of real multisport recordings")
struct MultisportSegmentationTests {
    /// Seconds between each found leg's start and the device's leg start, in order (nil where the
    /// found legs' sports differ from the device's).
    func offsets(_ name: String) async throws -> [Double]? {
        let result = try await ImportedFiles.shared.result(name, autoSegment: true)
        let found = result.workout.activities
        guard found.map(\.configuration.activityType) == result.legs.map(\.configuration.activityType) else {
            return nil
        }
        return zip(found, result.legs).map { abs($0.start.timeIntervalSince($1.start)) }
    }

    /// Older watches count no strokes in an open-water swim's records, only a stroke rate in
    /// `cadence` (26–37 a minute): those records are a swim by themselves, so the swim ends where
    /// the athlete leaves the water (within 5 s of the device's T1 on these four: 920XT 1 s, 935
    /// 5 s, 945 1 s, 735XT 1 s), not at the first
    /// record without a stroke counter.
    @Test(arguments: ["fp_sample_mulitple_header", "cs_track_cs_1451", "sl_6788312639-1", "tl_ObertrumTriathlon"])
    func theSwimEndsWhereTheStrokeRateStops(name: String) async throws {
        let result = try await ImportedFiles.shared.result(name, autoSegment: true)
        let found = result.workout.activities
        try #require(found.count >= 2 && result.legs.count == 5)
        #expect(found[0].configuration.activityType == .swimming)
        #expect(found[1].configuration.activityType == .transition)
        let offset = abs(found[1].start.timeIntervalSince(result.legs[1].start))
        print("\(name): automatic T1 off the device's by \(offset) s")
        #expect(offset <= 5)
    }

    /// One row per leg boundary: the device's time (seconds from its first session's start), ours,
    /// and where the records show the athlete had changed leg well before the lap press, the
    /// sensors' time (a transition: the last GPS position reached at 1 m/s or more, after which the
    /// positions stand still up to the press).
    struct BoundaryRow: CustomStringConvertible {
        var file: String
        var boundary: String
        var device: Double
        var ours: Double
        var sensors: Double?
        /// The sport of the leg that begins at the boundary, ours (the device's is the same: asserted).
        var sport = ""
        /// What the records show from `sensors` on.
        var evidence = "stands still from there"
        var difference: Double { ours - (sensors ?? device) }
        var description: String {
            "| \(file) | \(boundary) | \(sport) | \(Int(device)) | \(ours) | \(sensors.map { "\(Int($0)) (\(evidence))" } ?? "") | \(difference) |"
        }
    }

    /// Where the athlete stands still from `limit` back to some earlier record, by the GPS positions (what the
    /// detector never reads: it takes speeds and distances): the last record reached at 1 m/s or more from the
    /// record before it, if the positions moved slower from there to the press for over a minute.
    func standingSince(_ records: [FITRecord], before limit: Double) -> Double? {
        let fixes = records.compactMap { record -> (time: Double, latitude: Double, longitude: Double)? in
            guard let time = record.timestamp.map(Double.init), time <= limit, let latitude = record.positionLat,
                let longitude = record.positionLong
            else { return nil }
            let degrees = 180 / 2_147_483_648.0
            return (time, Double(latitude) * degrees, Double(longitude) * degrees)
        }.sorted { $0.time < $1.time }
        var moving: Double?
        for (previous, fix) in zip(fixes, fixes.dropFirst()) where fix.time > previous.time {
            // Metres on the ground (an equirectangular step: metres apart).
            let north = (fix.latitude - previous.latitude) * 111_320
            let east = (fix.longitude - previous.longitude) * 111_320 * cos(fix.latitude * .pi / 180)
            if (north * north + east * east).squareRoot() / (fix.time - previous.time) >= 1 { moving = fix.time }
        }
        guard let moving, limit - moving > 60 else { return nil }
        return moving
    }

    /// Issue 26's bar for `--auto-segment`: every leg boundary of every multisport recording here
    /// (the device's sports hidden: swim-bike-run, the duathlons' run-bike-run, the pool swim-run-swim)
    /// is found within 60 s of the device's, with the right sport, the sequence of sports found from the
    /// sensors (`LegSequence.detected`); where the records show the athlete standing still for over a
    /// minute before the lap press, within 60 s of where the records stop moving. The table printed is
    /// the one in docs/device-conventions-round2.md. (The fenix 3 duathlon's run, 131 s early until the run
    /// began after a stop at the rack within a minute of its first step: `theFenix3RunBeginsAsTheAthleteLeavesTheRack`.)
    @Test(arguments: [
        "mk_triathlon_summary_last", "mk_triathlon_summary_first", "fp_sample_mulitple_header", "cs_track_cs_1451",
        "sl_6788312639-1", "sl_20181013_kona_ironman", "tl_ObertrumTriathlon",
        "rz_Multisession-stop-after-transition", "fdw_duathlon", "gdb_22638574127_ACTIVITY",
    ])
    func everyLegBoundaryIsFoundWithinAMinute(name: String) async throws {
        let result = try await ImportedFiles.shared.result(name, autoSegment: true)
        let found = result.workout.activities
        let device = result.legs
        #expect(found.map(\.configuration.activityType) == device.map(\.configuration.activityType))
        try #require(found.count == device.count && device.count == 5)
        let records = try FITDecoder.decode(try SharedData.bytes(name)).records
        let origin = device[0].start
        var transitions = 0
        for index in 1..<device.count {
            let deviceTime = device[index].start.timeIntervalSince(origin)
            let ours = found[index].start.timeIntervalSince(origin)
            let type = found[index].configuration.activityType
            if type == .transition { transitions += 1 }
            let boundary = type == .transition ? "T\(transitions)" : Self.legName(type)
            var row = BoundaryRow(
                file: name, boundary: boundary, device: deviceTime, ours: ours, sport: type.rawValue)
            if abs(ours - deviceTime) > 60, device[index].configuration.activityType == .transition {
                let press = FITTime.seconds(device[index].start)
                row.sensors = standingSince(records, before: press).map { $0 - FITTime.seconds(origin) }
            }
            print(row)
            #expect(abs(row.difference) <= 60, "\(row)")
        }
    }
}

extension MultisportSegmentationTests {
    /// A leg's name in the table: bike, run, swim.
    static func legName(_ type: WorkoutActivityType) -> String {
        switch type {
        case .cycling: "bike"
        case .running: "run"
        case .swimming: "swim"
        default: type.rawValue
        }
    }
}

    /// Half an hour on the flat at 3.3 m/s with no cadence, power or step length (a watch without a foot pod or a
    /// cadence sensor) looks paddled record by record but counts no stroke: no paddled stretch. The same records with
    /// a stroke rate now and then (40 a minute in one record of ten: 5 m a stroke) are one.
    @Test func aFlatStretchWithoutStrokesIsNoPaddle() {
        func records(strokeEvery: Int?) -> SortedRecords {
            let records = (0..<1800).map { second in
                var record = FITRecord(timestamp: 1_000_000_000 + UInt32(second))
                record.speed = 3.3
                record.altitude = 12
                record.distance = 3.3 * Double(second)
                if let strokeEvery, second % strokeEvery == 0 { record.cadence = 40 }
                return record
            }
            return SortedRecords(records: records, order: records.indices.map { Int32($0) })
        }
        #expect(ImportPlanner.paddleSpans(records(strokeEvery: nil)).isEmpty)
        #expect(ImportPlanner.paddleSpans(records(strokeEvery: 10)).count == 1)
    }

extension MultisportSegmentationTests {
    /// The fenix 2 multisport: seven sessions of one lap each (no auto-lap; `activity.type` manual): generic 11738 s
    /// 25.1 km, T 335 s, running 2295 s 2.2 km, T 4.3 s, running 6764 s 12.7 km, T 270 s, cycling 3211 s 28.9 km: an
    /// adventure race. The generic leg is a paddle: 3¼ hours on the water (altitude −34 to −8 m) at 1.8–3 m/s, a
    /// wrist's cadence of 0 in 17–95 % of the records and else 30–127 a minute (the strokes' rhythm now and then), no
    /// step length, no power. It is found as one paddling leg (`ImportPlanner.paddleSpans`, `.paddleSports`: the
    /// device's `generic` names no sport) whose end is the device's T1, then on foot (the device's `running`, a climb
    /// to 645 m at 0.7–1.2 m/s: a hike) and the bike. Every boundary where the sport changes is within 60 s of the
    /// device's; the bike's within 60 s of where the records ride away (the athlete pressed the lap button 70 s after
    /// riding off at 6 m/s and more). The 4.3 s transition between the two runs is no change of sport: the athlete
    /// goes on in strides either side of the two presses (asserted), and no leg is found there.
    /// (Before: 39 legs, the paddle 35 of them by turns riding and running.)
    @Test func theFenix2AdventureRaceIsFoundLegByLeg() async throws {
        let name = "fp_activity-large-fenxi2-multisport"
        let result = try await ImportedFiles.shared.result(name, autoSegment: true)
        let device = result.legs
        try #require(device.map(\.configuration.activityType) == [
            .other, .transition, .running, .transition, .running, .transition, .cycling,
        ])
        let found = result.workout.activities
        #expect(
            found.map(\.configuration.activityType) == [.paddleSports, .transition, .running, .transition, .cycling])
        try #require(found.count == 5)
        // The boat's distance is the paddle's: the device's first session states 25,072.07 m.
        let paddled = try #require(found[0].statistics[.distancePaddleSports]?.sum?.doubleValue(for: .meter))
        #expect(abs(paddled - 25_072.07) <= 0.005 * 25_072.07, "\(paddled)")
        let origin = device[0].start
        func offset(_ date: Date) -> Double { date.timeIntervalSince(origin) }
        let records = try FITDecoder.decode(try SharedData.bytes(name)).records.compactMap { record in
            record.timestamp.map { (time: Double($0) - FITTime.seconds(origin), record: record) }
        }.sorted { $0.time < $1.time }
        // Where the records ride away for good before the device's bike: the first of the records at 5 m/s and more
        // that last to the press.
        let press = offset(device[6].start)
        let before = records.filter { $0.time < press }
        let ridingFrom = try #require(before.lastIndex { ($0.record.speed ?? 0) < 5 }.map { before[$0 + 1].time })
        let rows: [(boundary: String, device: Double, ours: Double, sensors: Double?)] = [
            ("T1", offset(device[1].start), offset(found[1].start), nil),
            ("run", offset(device[2].start), offset(found[2].start), nil),
            ("T", offset(device[5].start), offset(found[3].start), nil),
            ("bike", press, offset(found[4].start), ridingFrom),
        ]
        for row in rows {
            let sensors = row.sensors.map { "\(Int($0))" } ?? ""
            print("| \(name) | \(row.boundary) | \(Int(row.device)) | \(row.ours) | \(sensors) |")
            #expect(abs(row.ours - (row.sensors ?? row.device)) <= 60, "\(row)")
        }
        #expect(press - ridingFrom > 60)
        // The device's run-to-run transition: strides a minute either side of its 4.3 s (the metres a cadence cycle
        // covers: a stride, under 2 m; the athlete slows at the top of the climb, 1.4 → 0.7 m/s).
        let change = offset(device[3].start)
        func stride(_ from: Double, _ to: Double) -> (metres: Double, cadence: Double) {
            let span = records.filter { $0.time >= from && $0.time < to }
            let cycles = span.compactMap { entry -> (Double, Double)? in
                guard let speed = entry.record.speed, let cadence = entry.record.cadence, cadence > 0 else {
                    return nil
                }
                return (speed * 60 / Double(cadence), Double(cadence))
            }
            let metres = cycles.map(\.0).sorted()
            let cadences = cycles.map(\.1).sorted()
            return (
                metres.isEmpty ? .infinity : metres[metres.count / 2],
                cadences.isEmpty ? 0 : cadences[cadences.count / 2]
            )
        }
        let (walkBefore, walkAfter) = (stride(change - 60, change), stride(change + 5, change + 65))
        print("\(name): the run-to-run transition at \(change) s: \(walkBefore) before, \(walkAfter) after")
        #expect(walkBefore.metres < 2 && walkAfter.metres < 2 && abs(walkBefore.cadence - walkAfter.cadence) < 15)
        #expect(found[2].start < device[3].start && found[3].start > device[4].start)
    }
}

extension MultisportSegmentationTests {
    /// The Forerunner 735XT test triathlon recorded in running mode throughout (one session): with
    /// `--auto-segment` it comes out as five legs, each boundary within 60 s of the boundaries its
    /// source (TriathLink, `TestTriathlonTestTimestamps.csv`, quoted in ../shared/data/README.md)
    /// documented: 885, 950, 1739 and 1793 s from the start. The watch counted arm strokes as steps in
    /// the swim (0.3–0.6 m at 0.6–0.9 m/s) and its strap repeated stale steps on the bike.
    @Test func theTriathlonRecordedAsOneRunComesOutAsFiveLegs() async throws {
        let name = "tl_TestTriathlon"
        let result = try await ImportedFiles.shared.result(name, autoSegment: true)
        try #require(result.legs.count == 1)
        let found = result.workout.activities
        #expect(found.map(\.configuration.activityType) == [.swimming, .transition, .cycling, .transition, .running])
        try #require(found.count == 5)
        let origin = result.legs[0].start
        let documented: [Double] = [885, 950, 1739, 1793]
        for (index, (boundary, reference)) in zip(["T1", "bike", "T2", "run"], documented).enumerated() {
            let row = BoundaryRow(
                file: name, boundary: boundary, device: reference,
                ours: found[index + 1].start.timeIntervalSince(origin))
            print(row)
            #expect(abs(row.difference) <= 60, "\(row)")
        }
    }
}

extension MultisportSegmentationTests {
    /// `--auto-segment` plans a single session as a triathlon only on the records' evidence: a plain run, ride
    /// and pool swim (single-sport recordings, their sports and pools from ../shared/data/README.md) keep their
    /// sport, pool and lap length and have no legs, as without it.
    @Test(arguments: [
        ("al2_920xt-run", WorkoutActivityType.running, SwimmingLocationType.unknown, nil as Double?),
        ("al2_310xt-bike", .cycling, .unknown, nil),
        ("al2_920xt-lap-swim", .swimming, .pool, 50),
        ("mk_sdk_activity_poolswim_with_hr", .swimming, .pool, 25),
    ])
    func aSingleSportFileKeepsItsSportWithAutoSegment(
        name: String, sport: WorkoutActivityType, pool: SwimmingLocationType, lapLength: Double?
    ) async throws {
        let result = try await ImportedFiles.shared.result(name, autoSegment: true)
        let configuration = result.workout.configuration
        #expect(configuration.activityType == sport)
        #expect(configuration.swimmingLocationType == pool)
        #expect(configuration.lapLength == lapLength.map { Quantity($0, .meter) })
        // One activity is the workout itself (no legs), as the import without automatic segmentation makes it.
        #expect(result.workout.activities.isEmpty)
        let plain = try await ImportedFiles.shared.result(name).workout
        #expect(configuration == plain.configuration)
        // Typed by its sport, as without the flag (not record by record: a slow walk opening a run is no swim).
        #expect(result.workout.statistics == plain.statistics)
    }
}

/// Automatic segmentation types a record with a stroke rate in `cadence` as a swim only while the
/// swim that opens the file goes on: never a slow walk in T1, a slow crank on the bike or a
/// runner's slow records.
@Suite("Automatic segmentation: the stroke rate only continues the opening swim")
struct StrokeRateAfterTheSwimTests {
    /// How many swim-typed samples (distance and strokes) the automatic segmentation's plan of
    /// `name` dates inside the device's leg `index`, its bounds from the device's own session
    /// (`start_time`, `total_elapsed_time`, as garmin-fit-sdk decoded them).
    func swimSamples(_ name: String, inLeg index: Int) throws -> Int {
        let device = DeviceValues(object: try SharedData.expected(name)["device"] as? [String: Any] ?? [:])
        let sessions = device.list("sessions").sorted {
            ($0.string("start_time") ?? "") < ($1.string("start_time") ?? "")
        }
        try #require(sessions.count == 5)
        let start = try #require(sessions[index].date("start_time"))
        let end = start.addingTimeInterval(try #require(sessions[index].double("total_elapsed_time")))
        let plan = try FITImportPlan(bytes: try SharedData.bytes(name), options: ImportOptions(autoSegment: true))
        return plan.steps.reduce(0) { count, step in
            guard case .samples(let samples) = step.step else { return count }
            return count
                + samples.filter {
                    ($0.type == .distanceSwimming || $0.type == .swimmingStrokeCount) && $0.start >= start
                        && (index == sessions.count - 1 ? $0.start <= end : $0.start < end)
                }.count
        }
    }

    /// The bike, T2 and run legs of the labelled triathlons hold no swim: a 945's slow crank turns
    /// (51 of its bike's records under 45 a minute) and a 935's slow run records (2 in each of its
    /// runs) were typed swimming, their distance a swim's and strokes made up from the cadence.
    @Test(arguments: [
        "sl_6788312639-1", "cs_track_cs_1451", "sl_20181013_kona_ironman", "fp_sample_mulitple_header",
        "tl_ObertrumTriathlon", "mk_triathlon_summary_last",
    ])
    func noLegAfterT1HoldsASwim(name: String) throws {
        for index in 2..<5 {
            #expect(try swimSamples(name, inLeg: index) == 0, "\(name) leg \(index + 1)")
        }
    }
}

extension StrokeRateAfterTheSwimTests {
    /// T1 holds no swim once the athlete is out of the water: the 945's slow steps at the end of
    /// T1 (cadence 43, a minute after its last stroke) were typed swimming. (The FR255's T1 is left
    /// out: its records' own stroke counter still counts up there.)
    @Test(arguments: [
        "sl_6788312639-1", "cs_track_cs_1451", "sl_20181013_kona_ironman", "fp_sample_mulitple_header",
        "tl_ObertrumTriathlon",
    ])
    func t1HoldsNoSwim(name: String) throws {
        #expect(try swimSamples(name, inLeg: 1) == 0)
    }
}

extension MultisportSegmentationTests {
    /// The longest stretch of records slower than 1 m/s with a position in `window` (FIT seconds): its first
    /// and last record's time and its mean position (degrees).
    func stand(_ records: [FITRecord], in window: Range<Double>)
        -> (first: Double, last: Double, latitude: Double, longitude: Double)?
    {
        var best: [FITRecord] = []
        var current: [FITRecord] = []
        for record in records {
            guard let time = record.timestamp.map(Double.init), window.contains(time), record.positionLat != nil,
                record.positionLong != nil, let speed = record.speed
            else { continue }
            if speed < 1 {
                current.append(record)
            } else {
                if current.count > best.count { best = current }
                current = []
            }
        }
        if current.count > best.count { best = current }
        guard let first = best.first?.timestamp, let last = best.last?.timestamp else { return nil }
        let degrees = 180 / 2_147_483_648.0
        let latitude = best.reduce(0) { $0 + Double($1.positionLat ?? 0) } / Double(best.count) * degrees
        let longitude = best.reduce(0) { $0 + Double($1.positionLong ?? 0) } / Double(best.count) * degrees
        return (Double(first), Double(last), latitude, longitude)
    }

    /// Metres between two positions (degrees; an equirectangular step, as `standingSince`).
    func metres(_ a: (latitude: Double, longitude: Double), _ b: (latitude: Double, longitude: Double)) -> Double {
        let north = (a.latitude - b.latitude) * 111_320
        let east = (a.longitude - b.longitude) * 111_320 * cos(a.latitude * .pi / 180)
        return (north * north + east * east).squareRoot()
    }

    /// The fenix 3 duathlon's run begins as the athlete leaves the rack, not at the first steps off the bike.
    /// The sensors (from the file, asserted here): the bike stops at 3963 s; a chest strap counts running steps
    /// (cadence 93–97, 2.6–3.3 m/s) for about 50 s as the athlete runs the bike to the rack; the athlete then
    /// stands from 4037 to 4081 s (the last record moving is at 4022 s, heart rate falls 145 → 123 bpm) at the
    /// place the athlete stood in T1 (1157–1196 s), 2.8 m apart: the rack; the next record, 4087 s, runs. The
    /// device's run begins at 4099 s. Found: the run at the first step after the stop, within 60 s of both
    /// (was 3968 s, 131 s early: a stop more than half a minute after the first step was taken as the run's own).
    @Test func theFenix3RunBeginsAsTheAthleteLeavesTheRack() async throws {
        let name = "rz_Multisession-stop-after-transition"
        let result = try await ImportedFiles.shared.result(name, autoSegment: true)
        let device = result.legs
        try #require(device.map(\.configuration.activityType) == [
            .running, .transition, .cycling, .transition, .running,
        ])
        let records = try FITDecoder.decode(try SharedData.bytes(name)).records
        let origin = FITTime.seconds(device[0].start)
        func window(_ leg: Int) -> Range<Double> {
            FITTime.seconds(device[leg].start)..<FITTime.seconds(device[leg + 1].start)
        }
        let t1 = try #require(stand(records, in: window(1)))
        let t2 = try #require(stand(records, in: window(3)))
        #expect(t1.first - origin == 1157 && t1.last - origin == 1196)
        #expect(t2.first - origin == 4037 && t2.last - origin == 4081)
        let apart = metres((t1.latitude, t1.longitude), (t2.latitude, t2.longitude))
        #expect(apart < 5, "\(apart) m")
        // The record after the stand moves on foot: the athlete leaves the rack.
        let leaves = try #require(records.first { ($0.timestamp.map(Double.init) ?? 0) > t2.last })
        let leaving = try #require(leaves.timestamp.map(Double.init)) - origin
        #expect(leaving == 4087 && (leaves.speed ?? 0) >= 1 && (leaves.cadence ?? 0) > 0)
        let found = result.workout.activities
        try #require(found.count == 5)
        let run = found[4].start.timeIntervalSince(device[0].start)
        let deviceRun = device[4].start.timeIntervalSince(device[0].start)
        print("| \(name) | run | running | \(Int(deviceRun)) | \(run) | \(Int(leaving)) (leaves the rack) | \(run - leaving) |")
        #expect(abs(run - leaving) <= 60 && abs(run - deviceRun) <= 60, "\(run)")
    }
}
