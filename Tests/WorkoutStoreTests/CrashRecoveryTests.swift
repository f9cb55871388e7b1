import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore

/// Line-by-line reader of a child's standard output.
final class LineReader: @unchecked Sendable {
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, or nil at end of file.
    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}

private let rideSeconds = 600

private let legSeconds = 120

/// Continues (or starts) the synthetic ride in-process exactly as `workout debug-record` does.
private func drive(_ session: WorkoutSession, ride: SyntheticRide, clock: ManualClock) throws {
    try SyntheticRideDriver.drive(session, ride: ride, clock: clock, seconds: rideSeconds, leg: legSeconds)
}

@Suite("Store: crash safety")
struct CrashRecoveryTests {
    /// The workout an uninterrupted recording of the ride gives.
    private func reference(seed: UInt64) throws -> Workout {
        let ride = SyntheticRide(seed: seed)
        let clock = ManualClock(ride.start)
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: clock,
            options: BuilderOptions(identifiers: .seeded(seed)))
        try session.start(at: ride.start)
        try drive(session, ride: ride, clock: clock)
        return try session.builder.finishWorkout()
    }

    /// SQLite only: kills a process writing a file (PostgreSQL's kill and restart faults: scripts/live-fault.sh).
    @Test("SIGKILL at random points (24, or $WORKOUT_KILL_TRIALS): recovery has exactly the committed samples")
    func killedRecorderRecovers() throws {
        var generator = SystemRandomNumberGenerator()
        var summary: [String] = []
        var kills = 0
        var attempt = 0
        // 24 kills by default (WORKOUT_KILL_TRIALS=100 for the long run, scripts/kill-test.sh); a recorder
        // that finishes before its random kill point (a loaded machine can make it commit less often than
        // drawn) is checked as a clean run and the trial is drawn again.
        let trials = ProcessInfo.processInfo.environment["WORKOUT_KILL_TRIALS"].flatMap { Int($0) } ?? 24
        while kills < trials, attempt < trials * 5 / 2 {
            attempt += 1
            let folder = try temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let path = folder.appendingPathComponent("crash.sqlite").path
            let seed = UInt64(attempt)
            let process = Process()
            process.executableURL = BuiltProducts.executable("workout")
            process.arguments = [
                "debug-record", "--db", path, "--seed", "\(seed)", "--seconds", "\(rideSeconds)", "--speed", "600",
                "--commit-interval", "0.01", "--leg", "\(legSeconds)",
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            let reader = LineReader(pipe.fileHandleForReading)
            // Kill after a random number of reported commits, plus a random few milliseconds.
            let commitsBeforeKill = Int.random(in: 1...15, using: &generator)
            var lastReported = 0
            var seen = 0
            var finished = false
            while seen < commitsBeforeKill, let line = reader.next() {
                if line.hasPrefix("committed "), let count = Int(line.dropFirst("committed ".count)) {
                    lastReported = count
                    seen += 1
                }
                if line.hasPrefix("saved ") {
                    finished = true
                    break
                }
            }
            if !finished { Thread.sleep(forTimeInterval: Double.random(in: 0...0.03, using: &generator)) }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let store = try WorkoutStore(path: path)
            let ride = SyntheticRide(seed: seed)
            if process.terminationReason != .uncaughtSignal {
                // Finished before the kill: the saved workout is the uninterrupted one, nothing journaled.
                #expect(try store.journaledSessions().isEmpty)
                #expect(try store.workouts(matching: WorkoutQuery()) == [try reference(seed: seed)])
                continue
            }
            kills += 1
            let clock = ManualClock(ride.start)
            let recovered = try #require(try store.recoverActiveSession(clock: clock, commitInterval: 0))
            let committed = try recovered.committedSamples()
            // Nothing reported as committed is lost, nothing is duplicated, the order is the ride's.
            #expect(committed.count >= lastReported, "attempt \(attempt)")
            #expect(committed == ride.samples(0..<committed.count), "attempt \(attempt)")
            #expect(recovered.builder.counters.accepted == committed.count)
            // Recording goes on and the finished workout saves, equal to an uninterrupted recording.
            try drive(recovered.session, ride: ride, clock: clock)
            let workout = try recovered.finish()
            #expect(workout == (try reference(seed: seed)), "attempt \(attempt)")
            #expect(try store.samples(workout: workout.id) == ride.samples(0..<(rideSeconds * SyntheticRide.streams)))
            #expect(try store.journaledSessions().isEmpty)
            summary.append("\(lastReported)/\(committed.count)")
        }
        #expect(kills >= trials * 5 / 6, "only \(kills) of \(attempt) recorders were killed while recording")
        print(
            "crash trials, \(kills) kills in \(attempt) attempts (reported/recovered samples): \(summary.joined(separator: " "))"
        )
    }

    @Test(arguments: Backend.available) func journalCommitsAndRecoversInProcess(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ride = SyntheticRide(seed: 5)
        let clock = ManualClock(ride.start)
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: clock,
            options: BuilderOptions(identifiers: .seeded(5)), commitInterval: 0)
        try recording.session.start(at: ride.start)
        try recording.session.beginNewActivity(
            configuration: WorkoutConfiguration(activityType: .cycling), at: ride.start)
        try recording.builder.add(ride.samples(0..<50))
        try recording.session.pause(at: ride.date(10))
        try recording.session.resume(at: ride.date(20))
        try recording.builder.add(ride.samples(100..<150))
        try recording.commit()
        try recording.builder.add(ride.samples(150..<200))  // never committed: lost in the "crash"
        // The "crash": no close(), no commit (commitInterval 0 runs no background thread).
        let before = recording.builder.snapshot(at: ride.date(30))
        let recovered = try #require(try store.recoverActiveSession(clock: clock, commitInterval: 0))
        #expect(recovered.id == recording.id)
        #expect(recovered.session.state == .running)
        #expect(try recovered.committedSamples() == ride.samples(0..<50) + ride.samples(100..<150))
        let after = recovered.builder.snapshot(at: ride.date(30))
        #expect(after.events == before.events)
        #expect(after.activities.map(\.id) == before.activities.map(\.id))
        #expect(recovered.builder.activeDuration(at: ride.date(30)) == 20)
        try recovered.discard()
        #expect(try store.journaledSessions().isEmpty)
        #expect(try store.recoverActiveSession() == nil)
    }

    /// The issue-13 builder options (interpolation, rests out of the averages, open-water SWOLF)
    /// are journaled: a recovered session rebuilds the statistics the crashed one had.
    @Test(arguments: Backend.available, [SwimmingLocationType.pool, .openWater])
    func recoveryRebuildsTheStatisticsOfTheRecordingConventions(_ backend: Backend, location: SwimmingLocationType) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let start = Date(timeIntervalSinceReferenceDate: 700_000_000)
        func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }
        let source = SourceDevice(name: "watch")
        let configuration = WorkoutConfiguration(
            activityType: .swimming, locationType: location == .pool ? .indoor : .outdoor,
            swimmingLocationType: location, lapLength: location == .pool ? Quantity(25, .meter) : nil)
        let clock = ManualClock(start)
        let recording = try store.beginRecording(
            configuration: configuration, clock: clock,
            options: BuilderOptions(
                holdCap: 30, identifiers: .seeded(13), interpolation: .linear, averagesExcludeRests: true,
                openWaterSWOLF: .secondsAndStrokesPer25m),
            commitInterval: 0)
        try recording.session.start(at: start)
        for length in 0..<8 {
            let from = Double(length) * 30
            let rest = length % 3 == 2
            try recording.builder.add([
                WorkoutEvent(
                    type: .lap, start: at(from), duration: 30,
                    metadata: [SwimMetadataKey.lengthKind: .string(rest ? "rest" : "active")])
            ])
            var samples = stride(from: from, to: from + 30, by: 7).map {
                QuantitySample(.heartRate, rest ? 110 : 140 + $0 / 10, at: at($0), source: source)
            }
            if !rest {
                samples.append(
                    QuantitySample(.distanceSwimming, 25, at: at(from), end: at(from + 30), source: source))
                samples.append(
                    QuantitySample(.swimmingStrokeCount, 18, at: at(from), end: at(from + 30), source: source))
            }
            try recording.builder.add(samples)
        }
        try recording.commit()
        // The "crash": no close(), no commit.
        let before = recording.builder.snapshot(at: at(240))
        // The options are in force: rests (110 bpm) left out of the average; open water has a SWOLF.
        #expect((before.statistics[.heartRate]?.average?.value ?? 0) > 140)
        #expect((before.statistics[.swimmingSWOLF] != nil) == (location == .openWater))
        let recovered = try #require(try store.recoverActiveSession(clock: clock, commitInterval: 0))
        let after = recovered.builder.snapshot(at: at(240))
        #expect(after.statistics == before.statistics)
        #expect(after.duration == before.duration)
        try recovered.discard()
    }

    @Test("two sessions recording at once, chunks closing exactly at a commit, recover, finish and discard apart", arguments: Backend.available)
    func twoInterleavedSessionsRecoverApart(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let clock = ManualClock(t(0))
        let options = BuilderOptions(dataSource: WorkoutDataSource(explicitTypes: [.heartRate]))
        let configuration = WorkoutConfiguration(activityType: .cycling)
        let first = try store.beginRecording(configuration: configuration, clock: clock, options: options, commitInterval: 0)
        let second = try store.beginRecording(configuration: configuration, clock: clock, options: options, commitInterval: 0)
        try first.session.start(at: t(0))
        try second.session.start(at: t(0))
        var firstSamples: [QuantitySample] = []
        var secondSamples: [QuantitySample] = []
        var firstRoute: [RoutePoint] = []
        for elapsed in 0..<4096 {
            clock.set(t(Double(elapsed)))
            let heartRate = QuantitySample(.heartRate, Double(120 + elapsed % 7), at: t(Double(elapsed)), source: strap)
            try first.builder.add([heartRate])
            firstSamples.append(heartRate)
            let point = RoutePoint(
                date: t(Double(elapsed)), latitude: 45, longitude: 6, altitude: elapsed % 2 == 0 ? nil : 100)
            try first.builder.addRoute([point])
            firstRoute.append(point)
            let other = QuantitySample(.heartRate, 100, at: t(Double(elapsed)), source: bike)
            try second.builder.add([other])
            secondSamples.append(other)
            // Commits every 512 s: the 4,096th sample and point close their chunks exactly at a commit.
            if elapsed % 512 == 511 {
                try first.commit()
                try second.commit()
            }
        }
        clock.set(t(5000))
        let late = QuantitySample(.heartRate, 150, at: t(5000), source: strap)
        try first.builder.add([late])
        firstSamples.append(late)
        try first.commit()
        // The "crash": both picked up by id.
        let firstAgain = try #require(try store.recoverActiveSession(id: first.id, clock: clock, commitInterval: 0))
        let secondAgain = try #require(try store.recoverActiveSession(id: second.id, clock: clock, commitInterval: 0))
        #expect(try firstAgain.committedSamples() == firstSamples)
        #expect(try secondAgain.committedSamples() == secondSamples)
        clock.set(t(5001))
        let after = QuantitySample(.heartRate, 151, at: t(5001), source: strap)
        try firstAgain.builder.add([after])
        firstSamples.append(after)
        try firstAgain.session.end(at: t(5002))
        let workout = try firstAgain.finish()
        #expect(try store.samples(workout: workout.id) == firstSamples)
        #expect(try store.route(workout: workout.id) == firstRoute)
        try secondAgain.discard()
        #expect(try store.samples(matching: SampleQuery(source: bike)).isEmpty)
        #expect(try store.journaledSessions().isEmpty)
    }

    /// A cycling recording on `fixture`'s store begun and started at `t(0)`, committed only when told: the journal the
    /// damage tests below damage behind its back.
    private func startedCyclingRecording(
        _ fixture: StoreFixture, options: BuilderOptions = BuilderOptions()
    ) throws -> (JournaledRecording, ManualClock) {
        let clock = ManualClock(t(0))
        let recording = try fixture.store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: clock, options: options,
            commitInterval: 0)
        try recording.session.start(at: t(0))
        return (recording, clock)
    }

    /// Expects recovery of `store`'s journal to refuse `recording`'s as damaged (`corruptChunk` naming it, its detail
    /// containing `detailContaining` when given).
    private func expectRecoveryRefusedAsDamage(
        _ store: WorkoutStore, _ recording: JournaledRecording, clock: ManualClock, detailContaining: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(sourceLocation: sourceLocation) {
            try store.recoverActiveSession(clock: clock, commitInterval: 0)
        } throws: { error in
            guard case .corruptChunk(let workout, let detail) = error as? StoreError else { return false }
            return workout == recording.id && detailContaining.map { detail.contains($0) } != false
        }
    }

    @Test("a journal whose chunk is missing is refused with a typed error, not recovered short", arguments: Backend.available)
    func journalMissingAChunkIsATypedError(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let explicitTypes = WorkoutDataSource(explicitTypes: [.heartRate, .distanceCycling])
        let options = BuilderOptions(dataSource: explicitTypes)
        let (recording, clock) = try startedCyclingRecording(fixture, options: options)
        try recording.builder.add((0..<10).map { QuantitySample(.heartRate, 140, at: t(Double($0)), source: strap) })
        try recording.builder.add(
            (10..<15).map {
                QuantitySample(.distanceCycling, 8, at: t(Double($0)), end: t(Double($0 + 1)), source: bike)
            })
        try recording.commit()
        try fixture.execute(
            sqlite: "DELETE FROM sample_chunk WHERE type = 'heartRate'",
            postgres: "DELETE FROM sample_chunk WHERE athlete = \(fixture.athleteLiteral) AND type = 'heartRate'")
        expectRecoveryRefusedAsDamage(fixture.store, recording, clock: clock)
    }

    // A journal whose last change is missing while the chunks still hold its samples was recovered short: the
    // samples dropped silently, and the next ones numbered past them.
    @Test("chunk samples that no journal change names are a typed error, not dropped", arguments: Backend.available)
    func chunkSamplesNoChangeNamesAreATypedError(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let (recording, clock) = try startedCyclingRecording(fixture)
        try recording.builder.add((0..<10).map { QuantitySample(.heartRate, 140, at: t(Double($0)), source: strap) })
        try recording.commit()
        try recording.builder.add((10..<15).map { QuantitySample(.heartRate, 150, at: t(Double($0)), source: strap) })
        try recording.commit()  // one change (the samples): one row on both backends
        try fixture.execute(
            sqlite: "DELETE FROM journal_change WHERE seq = (SELECT max(seq) FROM journal_change)",
            postgres: """
                DELETE FROM journal_change WHERE athlete = \(fixture.athleteLiteral)
                AND seq = (SELECT max(seq) FROM journal_change WHERE athlete = \(fixture.athleteLiteral))
                """)
        expectRecoveryRefusedAsDamage(fixture.store, recording, clock: clock, detailContaining: "5 samples")
    }

    @Test("a journal change numbered at the top of Int64 is a typed error, not an overflow trap", arguments: Backend.available)
    func journalChangeNumberOverflowIsATypedError(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let (recording, clock) = try startedCyclingRecording(fixture)
        try recording.builder.add((0..<10).map { QuantitySample(.heartRate, 140, at: t(Double($0)), source: strap) })
        try recording.session.pause(at: t(10))
        try recording.commit()  // SQLite: one packed row (start, samples, pause); PostgreSQL: a row each
        // The last change numbered at the top of Int64: the next one recovery would number overflows.
        try fixture.execute(
            sqlite: "UPDATE journal_change SET seq = ?", [Int64.max],
            postgres: """
                UPDATE journal_change SET seq = 9223372036854775807 WHERE athlete = \(fixture.athleteLiteral)
                AND seq = (SELECT max(seq) FROM journal_change WHERE athlete = \(fixture.athleteLiteral))
                """)
        expectRecoveryRefusedAsDamage(fixture.store, recording, clock: clock)
    }

    @Test("a journal chunk whose ordinal is Int64.max is a typed error, not an overflow trap", arguments: Backend.available)
    func journalChunkAtTheLastOrdinalIsATypedError(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let (recording, clock) = try startedCyclingRecording(fixture)
        try recording.builder.add([QuantitySample(.heartRate, 140, at: t(1), source: strap)])
        try recording.commit()
        let stored = try fixture.execute(
            sqlite: "SELECT hex(data) FROM sample_chunk",
            postgres: "SELECT encode(data, 'hex') FROM sample_chunk WHERE athlete = \(fixture.athleteLiteral)")
        // "WKC", version, kind, count 1, then the first ordinal (0, one byte): made Int64.max.
        let text = try #require(stored.first?.first ?? nil)
        var bytes = try #require(Hex.bytes(text))
        #expect(bytes[5] == 1 && bytes[6] == 0)
        bytes.replaceSubrange(6...6, with: [UInt8](repeating: 0xFF, count: 8) + [0x7F])
        try fixture.execute(
            sqlite: "UPDATE sample_chunk SET data = ?", [Data(bytes)],
            postgres: "UPDATE sample_chunk SET data = $1::bytea WHERE athlete = \(fixture.athleteLiteral)",
            ["\\x" + Hex.string(bytes)])
        expectRecoveryRefusedAsDamage(fixture.store, recording, clock: clock)
    }

    /// SQLite only: the failure is another connection holding the file's write lock.
    @Test("a commit that failed (file locked) writes its streams' tails with the next commit")
    func failedCommitKeepsItsTailsForTheNextCommit() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("s.sqlite").path
        let store = try WorkoutStore(path: path, busyTimeout: 0.2)
        let clock = ManualClock(t(0))
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: clock,
            options: BuilderOptions(dataSource: WorkoutDataSource(explicitTypes: [.heartRate, .distanceCycling])),
            commitInterval: 0)
        try recording.session.start(at: t(0))
        let heartRate = (0..<10).map { QuantitySample(.heartRate, 140, at: t(Double($0)), source: strap) }
        try recording.builder.add(heartRate)
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let holder = try DatabaseQueue(path: path, configuration: configuration)
        try holder.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        #expect(throws: StoreError.locked(path: path)) { try recording.commit() }
        try holder.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        try holder.close()
        // The next commit adds only to another stream: the heart-rate tail must still be written.
        let distance = (10..<15).map {
            QuantitySample(.distanceCycling, 8, at: t(Double($0)), end: t(Double($0 + 1)), source: bike)
        }
        try recording.builder.add(distance)
        try recording.commit()
        #expect(try recording.committedSamples() == heartRate + distance)
        let recovered = try #require(try store.recoverActiveSession(clock: clock, commitInterval: 0))
        #expect(try recovered.committedSamples() == heartRate + distance)
    }
}
