import Foundation
import Testing
import WorkoutEngine
import WorkoutFormats
import WorkoutImport
import WorkoutModel
import WorkoutReplay
import WorkoutStore

/// Issue 13: every maker's conventions, each pinned on a real recording of ../shared/data.
@Suite("Device conventions on real recordings")
struct DeviceConventionTests {
    /// Every recording of ../shared/data/fit, by name.
    static let allNames: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: SharedData.directory + "/fit")) ?? []
        return names.filter { $0.hasSuffix(".fit") }.map { String($0.dropLast(4)) }.sorted()
    }()

    func session(_ name: String, _ index: Int = 0) throws -> DeviceValues {
        let device = DeviceValues(object: try SharedData.expected(name)["device"] as? [String: Any] ?? [:])
        let sessions = device.list("sessions").sorted {
            ($0.string("start_time") ?? "") < ($1.string("start_time") ?? "")
        }
        return try #require(sessions.count > index ? sessions[index] : nil)
    }

    func row(_ result: FileImportResult, session number: Int = 1) throws -> ComparisonRow {
        try #require(result.comparison?.rows.first { $0.kind == .session && $0.number == number })
    }

    /// The acceptance figure: on all 44 files every check agrees, but for the two files whose
    /// summaries the README shows cannot come from their own records (the Strava file's summary,
    /// written before the damage, and the Bryton file's records that never move), and for what the
    /// multisport files' records cannot show (docs/device-conventions-round2.md): four maxima that
    /// no record or strap beat reads (smart recording writes only some of the device's
    /// once-a-second values) and a 965's T2 distance its records stop short of. Every one of these
    /// says why (`FITComparison.notInFile`), from the file. None of the five multisport files is a
    /// self-contradiction: each device's own time in zone holds its maximum, and the 965's extra
    /// 2.83 m has two readings the file cannot tell apart (docs/device-conventions-round2.md, "Fourth part").
    @Test func everyRecordingAgreesWithItsDeviceOnEveryCheck() async throws {
        try #require(Self.allNames.count == 44)
        // The files imported side by side first (both cores), then summed up in order.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in Self.allNames { group.addTask { _ = try await ImportedFiles.shared.result(name) } }
            try await group.waitForAll()
        }
        var summary = FidelitySummary()
        for name in Self.allNames {
            let result = try await ImportedFiles.shared.result(name)
            summary.add(
                file: name, sessions: result.sessions, damaged: result.damage != nil, workout: result.workout,
                comparison: try #require(result.comparison))
        }
        let disagreements = summary.checks.flatMap(\.disagreements)
        #expect(
            Set(disagreements.map { "\($0.file) \($0.session ?? 0): \($0.field)" }) == [
                "fp_strava-android-app 1: distance", "mk_big_activity 1: distance",
                // Maxima between smart-recorded records.
                "cs_track_cs_1451 4: max HR", "sl_20181013_kona_ironman 1: max HR",
                "tl_ObertrumTriathlon 3: max HR", "tl_TestTriathlon 1: max HR",
                // A transition's distance the records do not show: a 965's records stop 4.5 s before T2's end.
                "gdb_22638574127_ACTIVITY 4: distance",
                // A transition's distance the records do reach, between whole seconds: cutting where the records
                // reach the device's stated total would make our figure the device's by construction.
                "cs_track_cs_1451 2: distance",
            ],
            "\(disagreements)")
        // Each of them but the 935's T1 distance is a figure of the device that no message of its file holds,
        // and says why.
        for disagreement in disagreements where disagreement.file != "cs_track_cs_1451" || disagreement.session != 2 {
            #expect(disagreement.notInFile != nil, "\(disagreement.file) \(disagreement.session ?? 0): \(disagreement.field)")
        }
        #expect(summary.disagreementsNotInFile == disagreements.count - 1)
        #expect(summary.checks.first { $0.name == "sessions" }?.agree == 44)
        #expect(summary.damagedFiles == ["fp_strava-android-app"])
        for check in summary.checks where ["sport", "elapsed", "timer", "SWOLF", "active lengths"].contains(check.name) {
            #expect(check.agree == check.total && check.total > 0, "\(check.name)")
        }
    }

    /// A watch that does not log rests as lengths: its timer runs through them, as its timer
    /// events say (the lengths add up to 150 s less).
    @Test func aPoolSwimsTimerFollowsTheTimerEvents() async throws {
        let name = "gc_PoolSwim-BingiWatch-1014"
        let device = try session(name)
        let result = try await ImportedFiles.shared.result(name)
        let timer = try #require(device.double("total_timer_time"))
        #expect(abs(result.workout.duration - timer) <= 1, "\(result.workout.duration) vs \(timer)")
        let lengths = DeviceValues(object: try SharedData.expected(name)["device"] as? [String: Any] ?? [:])
            .list("lengths").compactMap { $0.double("total_elapsed_time") }.reduce(0, +)
        #expect(lengths < timer - 100, "the lengths add up to \(lengths) s")
        // Its heart-rate average keeps the rests (not a Garmin).
        let average = try #require(device.double("avg_heart_rate"))
        #expect(abs((result.workout.statistics[.heartRate]?.average?.value ?? 0) - average) <= 1)
    }

    /// The fenix 3 logs rests as idle lengths: its timer is their sum (its whole-second timer
    /// events are a second late), and it averages heart rate over the lengths swum.
    @Test func aGarminPoolSwimAveragesHeartRateOverTheLengthsSwum() async throws {
        let name = "mk_sdk_activity_poolswim_with_hr"
        let device = try session(name)
        let result = try await ImportedFiles.shared.result(name)
        let average = try #require(device.double("avg_heart_rate"))
        let ours = try #require(result.workout.statistics[.heartRate]?.average?.value)
        #expect(abs(ours - average) <= 1, "\(ours) vs \(average)")
        #expect(abs(result.workout.duration - (device.double("total_timer_time") ?? 0)) <= 1)
        #expect(result.workout.statistics[.heartRate]?.maximum?.value == device.double("max_heart_rate"))
    }

    /// COROS: five timer stops, each pause a second shorter than its events; the laps agree too.
    @Test func corosPausesAreASecondShorterThanTheirEvents() async throws {
        let name = "fp_coros-pace-2-cycling"
        let result = try await ImportedFiles.shared.result(name)
        let timer = try #require(try session(name).double("total_timer_time"))
        #expect(abs(result.workout.duration - timer) <= 1, "\(result.workout.duration) vs \(timer)")
        let laps = try #require(result.comparison?.rows.filter { $0.kind == .lap })
        #expect(laps.count == 4)
        for lap in laps {
            #expect(abs((lap.ours.timerTime ?? 0) - (lap.device.timerTime ?? 0)) <= 1, "lap \(lap.number)")
        }
    }

    /// Very short fenix 5 activities with smart recording: the record written as the timer stops
    /// counts, and heart rate runs in a straight line between records seconds apart.
    @Test(arguments: ["fp_garmin-fenix-5-bike", "fp_garmin-fenix-5-run", "fp_garmin-fenix-5-walk"])
    func shortSmartRecordedActivitiesAgree(name: String) async throws {
        let device = try session(name)
        let result = try await ImportedFiles.shared.result(name)
        let statistics = result.workout.statistics
        let average = try #require(device.double("avg_heart_rate"))
        #expect(abs((statistics[.heartRate]?.average?.value ?? 0) - average) <= 1)
        #expect(statistics[.heartRate]?.maximum?.value == device.double("max_heart_rate"))
        let distance = try #require(device.double("total_distance"))
        let ours = try row(result).ours.distance ?? 0
        #expect(abs(ours - distance) <= 0.005 * distance, "\(ours) vs \(distance)")
    }

    /// The Forerunner 255's open-water SWOLF is strokes per 25 m + 1, per lap and per session.
    @Test(arguments: ["mk_triathlon_summary_first", "mk_triathlon_summary_last"])
    func openWaterSWOLFAgreesWithTheForerunner255(name: String) async throws {
        let result = try await ImportedFiles.shared.result(name)
        let swim = try #require(result.workout.activities.first)
        let swolf = try #require(try session(name).double("avg_swolf"))
        #expect(abs((swim.statistics[.swimmingSWOLF]?.average?.value ?? 0) - swolf) <= 1)
        let laps = try #require(result.comparison?.rows.filter { $0.kind == .lap && $0.sport == "swimming" })
        #expect(laps.count == 3)
        for lap in laps {
            let device = try #require(lap.device.swolf)
            #expect(abs((lap.ours.swolf ?? 0) - device) <= 1, "lap \(lap.number): \(lap.ours.swolf ?? 0) vs \(device)")
        }
    }

    /// The open-water SWOLF convention follows the model, not its product number: a regional
    /// variant of an older model numbered after 3900 (Forerunner 945 LTE Asia, 3978) keeps the
    /// older model's rule; a regional 2022 model (epix 2 APAC, 3944) has the new one.
    @Test func openWaterSWOLFConventionFollowsTheModelNotARegionalNumber() throws {
        var file = try FITDecoder.decode(try SharedData.bytes("mk_triathlon_summary_last"))
        func convention(_ product: UInt16) throws -> OpenWaterSWOLF? {
            file.fileIDs[0].product = product
            return try FITImportPlan(file: file, seed: 1).builderOptions.openWaterSWOLF
        }
        #expect(try convention(3652) == .secondsAndStrokesPer25m)  // fr945_lte
        #expect(try convention(3978) == .secondsAndStrokesPer25m)  // fr945_lte_asia
        #expect(try convention(3950) == .secondsAndStrokesPer25m)  // venu2_asia
        #expect(try convention(3992) == .strokesPer25mPlusOne)  // fr255
        #expect(try convention(3944) == .strokesPer25mPlusOne)  // epix_gen2_apac
    }

    /// The Strava app's file is cut short: what precedes the damage is imported and flagged.
    @Test func aDamagedFileImportsWhatPrecedesTheDamage() async throws {
        let result = try await ImportedFiles.shared.result("fp_strava-android-app")
        let damage = try #require(result.damage)
        #expect(damage.offset == 7471)
        #expect(result.anomalies.contains { $0.kind == .damagedFile && $0.detail.contains("byte 7471") })
        #expect(result.workout.metadata[ImportMetadataKey.damage] == .string(damage.description))
        #expect((result.workout.statistics[.distanceWalkingRunning]?.sum?.value ?? 0) > 900)
        // Refused whole without salvage.
        #expect(throws: ImportError.self) {
            try FITImportPlan(
                bytes: try SharedData.bytes("fp_strava-android-app"), options: ImportOptions(salvage: false))
        }
    }

    /// A multisport file cut during its run: the Forerunner 255 writes each leg's session at the
    /// leg's end, so the run's is lost; its records are still the run (from its sport message), not
    /// records outside the workout.
    @Test func aDamagedTriathlonKeepsTheLegUnderWayAtTheDamage() throws {
        let bytes = try SharedData.bytes("mk_triathlon_summary_last")
        let plan = try FITImportPlan(bytes: Array(bytes[..<(bytes.count * 95 / 100)]))
        #expect(plan.damage != nil)
        #expect(plan.configuration.activityType == .swimBikeRun)
        #expect(plan.legs.map(\.configuration.activityType) == [.swimming, .transition, .cycling, .transition, .running])
        #expect(!plan.anomalies.contains { $0.kind == .recordsOutsideSessions })
        let lastRecord = try #require(plan.file.records.compactMap(\.timestamp).max())
        #expect(plan.legs.last.map { FITTime.seconds($0.end) } == Double(lastRecord))
    }

    /// A real file cut anywhere never traps: it imports what precedes the cut (flagged) or, with
    /// nothing usable, throws the damage as a typed error.
    @Test func aRealFileCutAnywhereImportsOrThrowsATypedError() throws {
        let bytes = try SharedData.bytes("fp_garmin-fenix-5-walk")
        var imported = 0
        for cut in stride(from: 1, to: bytes.count, by: 61) {
            do {
                let plan = try FITImportPlan(bytes: Array(bytes[..<cut]))
                #expect(plan.damage != nil)
                #expect(plan.anomalies.contains { $0.kind == .damagedFile })
                imported += 1
            } catch {
                guard case .decoding = error else {
                    Issue.record("cut at \(cut): \(error)")
                    continue
                }
            }
        }
        #expect(imported > 0)
        #expect(throws: ImportError.self) { try FITImportPlan(bytes: Array(bytes[..<20])) }
    }

    /// The Bryton file contradicts itself: its 99,998 records never move (distance 405.81 m and the
    /// same position throughout) while its session says 32,172 m. We keep what the records say.
    @Test func theBrytonFilesRecordsNeverMove() async throws {
        let file = try FITDecoder.decode(try SharedData.bytes("mk_big_activity"))
        #expect(Set(file.records.compactMap(\.distance)) == [405.81])
        #expect(Set(file.records.compactMap(\.positionLat)).count == 1)
        #expect(file.sessions.first?.totalDistance == 32172.05)
        let result = try await ImportedFiles.shared.result("mk_big_activity")
        #expect(abs((try row(result).ours.distance ?? 0) - 405.81) < 0.01)
    }

    /// With automatic segmentation the records are typed by what they carry: moving every session
    /// boundary changes none of the samples the detector sees.
    @Test func autoSegmentTypesRecordsWithoutTheDevicesSports() throws {
        let bytes = try SharedData.bytes("mk_triathlon_summary_last")
        var file = try FITDecoder.decode(bytes)
        let options = ImportOptions(autoSegment: true)
        let plan = try FITImportPlan(file: file, options: options, seed: 1)
        // Every inner boundary a minute later; the workout's start and end stay.
        let order = file.sessions.indices.sorted { (file.sessions[$0].startTime ?? 0) < (file.sessions[$1].startTime ?? 0) }
        for (rank, index) in order.enumerated() {
            if rank > 0 { file.sessions[index].startTime = file.sessions[index].startTime.map { $0 + 60 } }
            if rank == 0 { file.sessions[index].totalElapsedTime = file.sessions[index].totalElapsedTime.map { $0 + 60 } }
            if rank == order.count - 1 {
                file.sessions[index].totalElapsedTime = file.sessions[index].totalElapsedTime.map { $0 - 60 }
            }
        }
        let moved = try FITImportPlan(file: file, options: options, seed: 1)
        func samples(_ plan: FITImportPlan) -> [String] {
            plan.steps.flatMap { step -> [String] in
                guard case .samples(let samples) = step.step else { return [] }
                return samples.map { "\($0.type) \($0.start.timeIntervalSinceReferenceDate) \($0.quantity.value)" }
            }
        }
        let ours = samples(plan)
        #expect(!ours.isEmpty)
        #expect(ours == samples(moved))
        // The explicit import types by leg, so there the same move changes the samples.
        let explicit = try FITImportPlan(file: try FITDecoder.decode(bytes), options: ImportOptions(), seed: 1)
        let explicitMoved = try FITImportPlan(file: file, options: ImportOptions(), seed: 1)
        #expect(samples(explicit) != samples(explicitMoved))
    }

    /// The same triathlon recorded without a running-dynamics pod: the Forerunner 255/955 measure
    /// running power at the wrist, so run records carry power but no step length. The detector
    /// still finds every leg within 30 s.
    @Test func autoSegmentFindsTheRunWithWristPowerAndNoStepLength() throws {
        var file = try FITDecoder.decode(try SharedData.bytes("mk_triathlon_summary_last"))
        for index in file.records.indices { file.records[index].stepLength = nil }
        let plan = try FITImportPlan(file: file, options: ImportOptions(autoSegment: true), seed: 1)
        let clock = ManualClock(plan.start)
        let session = try WorkoutSession(configuration: plan.configuration, clock: clock, options: plan.builderOptions)
        try plan.replay(into: session, clock: clock)
        let workout = try session.builder.finishWorkout()
        #expect(
            workout.activities.map(\.configuration.activityType) == [
                .swimming, .transition, .cycling, .transition, .running,
            ])
        for (activity, leg) in zip(workout.activities, plan.legs) {
            #expect(abs(activity.start.timeIntervalSince(leg.start)) <= 30, "\(leg.configuration.activityType) start")
            #expect(abs((activity.end ?? workout.end).timeIntervalSince(leg.end)) <= 30, "\(leg.configuration.activityType) end")
        }
    }

    /// Both copies of the Forerunner 255 triathlon give the same legs and statistics with the
    /// device's sports hidden too.
    @Test func bothTriathlonCopiesSegmentAlike() async throws {
        let first = try await ImportedFiles.shared.result("mk_triathlon_summary_first", autoSegment: true)
        let last = try await ImportedFiles.shared.result("mk_triathlon_summary_last", autoSegment: true)
        func legs(_ workout: Workout) -> [String] {
            workout.activities.map {
                "\($0.configuration.activityType) \($0.start) \(String(describing: $0.end)) \($0.duration) "
                    + "\($0.statistics.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value)" })"
            }
        }
        #expect(legs(first.workout).count == 5)
        #expect(legs(first.workout) == legs(last.workout))
        #expect(first.workout.statistics == last.workout.statistics)
    }

    /// The record a device writes as a session's timer stops (whole-second timestamp, under a
    /// second after `start_time + total_elapsed_time`) belongs to that session at every session's
    /// end, not only the last: here a run, a gap, then a ride.
    @Test func theTimerStopRecordCountsInItsSessionBeforeAGap() throws {
        let start = ImportTests.start
        var writer = FITWriter()
        writer.write(0, [.enumeration(0, 4), .uint16(1, 1), .uint16(2, 1), .uint32z(3, 7), .uint32(4, start)])
        writer.write(21, [.uint32(253, start), .enumeration(0, 0), .enumeration(1, 0), .uint32(3, 0)])
        // Run 0–299.6 s, its timer-stop record at 300 s (190 bpm); ride 400–700 s.
        for time in UInt32(0)...700 where time <= 300 || time >= 400 {
            writer.write(20, [.uint32(253, start + time), .uint8(3, time == 300 ? 190 : 120)])
            if time == 300 {
                writer.write(21, [.uint32(253, start + 300), .enumeration(0, 0), .enumeration(1, 4), .uint32(3, 0)])
            }
            if time == 400 {
                writer.write(21, [.uint32(253, start + 400), .enumeration(0, 0), .enumeration(1, 0), .uint32(3, 0)])
            }
        }
        writer.write(21, [.uint32(253, start + 700), .enumeration(0, 0), .enumeration(1, 4), .uint32(3, 0)])
        for (from, seconds, sport) in [(UInt32(0), 299.6, UInt8(1)), (400, 300, 2)] {
            writer.write(
                18,
                [
                    .uint32(253, start + from + UInt32(seconds.rounded(.up))), .uint32(2, start + from),
                    .enumeration(5, sport), .scaled(7, seconds, scale: 1000, size: 4),
                    .scaled(8, seconds, scale: 1000, size: 4),
                ])
        }
        let plan = try FITImportPlan(bytes: writer.finish())
        #expect(plan.legs.count == 2)
        let clock = ManualClock(plan.start)
        let session = try WorkoutSession(configuration: plan.configuration, clock: clock, options: plan.builderOptions)
        try plan.replay(into: session, clock: clock)
        let workout = try session.builder.finishWorkout()
        let run = try #require(workout.activities.first)
        #expect(run.statistics[.heartRate]?.maximum?.value == 190)
        #expect(workout.activities.last?.statistics[.heartRate]?.maximum?.value == 120)
    }

    /// A device that reboots mid-activity (`power_up` with no timer stop before it): the timer
    /// stops after the last record before the reboot.
    @Test func aRebootLeavesAGapOutOfTheTimer() throws {
        let start = ImportTests.start
        var writer = FITWriter()
        writer.write(0, [.enumeration(0, 4), .uint16(1, 1), .uint16(2, 1), .uint32z(3, 7), .uint32(4, start)])
        writer.write(21, [.uint32(253, start), .enumeration(0, 0), .enumeration(1, 0), .uint32(3, 0)])
        // Records 0–300 s, the device off until 440 s (power_up), records again 440–600 s.
        for time in UInt32(0)...600 where time <= 300 || time >= 440 {
            writer.write(20, [.uint32(253, start + time), .uint8(3, 150)])
        }
        writer.write(21, [.uint32(253, start + 440), .enumeration(0, 6), .enumeration(1, 0)])
        writer.write(21, [.uint32(253, start + 600), .enumeration(0, 0), .enumeration(1, 4), .uint32(3, 0)])
        writer.write(
            18,
            [
                .uint32(253, start + 600), .uint32(2, start), .enumeration(5, 1),
                .scaled(7, 600, scale: 1000, size: 4), .scaled(8, 460, scale: 1000, size: 4),
            ])
        let plan = try FITImportPlan(bytes: writer.finish())
        let clock = ManualClock(plan.start)
        let session = try WorkoutSession(configuration: plan.configuration, clock: clock, options: plan.builderOptions)
        try plan.replay(into: session, clock: clock)
        let workout = try session.builder.finishWorkout()
        #expect(workout.duration == 460)
    }
}
