import Foundation
import Testing
import WorkoutModel
import WorkoutSensors
import WorkoutStore
import WorkoutTestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `workout record --upload`: a real `workout serve` (SQLite) on loopback, a real `workout record` reading a watch
/// on a pseudo-terminal (the test writes the watch's frames), the server stopped and started again, a wrong token,
/// a server away at the end and `workout push` catching up.
@Suite("workout record --upload: live to a server", .serialized)
struct RecordUploadTests {
    /// A `workout record` process reading heart rate from a watch the test plays.
    final class Recording {
        let watch: PseudoTerminal
        let process = Process()
        let folder: URL
        private(set) var beats = 0

        private init(folder: URL, db: String, arguments: [String]) throws {
            self.folder = folder
            watch = try PseudoTerminal()
            for name in ["stdout", "stderr"] { try Data().write(to: folder.appendingPathComponent(name)) }
            process.executableURL = workoutExecutable()
            process.arguments =
                ["record", "--sensor", "\(watch.path):watch", "--activity", "running", "--recovery", "0", "--db", db]
                + arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: folder.appendingPathComponent("stdout"))
            process.standardError = try FileHandle(forWritingTo: folder.appendingPathComponent("stderr"))
            try process.run()
        }

        /// Starts `workout record` and plays the watch's hello once it has connected.
        static func start(folder: URL, db: String, arguments: [String]) async throws -> Recording {
            let recording = try Recording(folder: folder, db: db, arguments: arguments)
            try #require(await waitUntil(60) { recording.output.contains("connected") }, "\(recording.output)")
            try recording.watch.write(WatchLink.hello(device: "test watch"))
            return recording
        }

        deinit { if process.isRunning { process.terminate() } }

        var stdout: String { (try? String(contentsOf: folder.appendingPathComponent("stdout"), encoding: .utf8)) ?? "" }
        var stderr: String { (try? String(contentsOf: folder.appendingPathComponent("stderr"), encoding: .utf8)) ?? "" }
        var output: String { stdout + stderr }

        /// `count` heart-rate values, one per 0.1 s of the watch's time, sent at that pace (waiting without holding
        /// a thread of the cooperative pool).
        func beat(_ count: Int) async throws {
            for _ in 0..<count {
                beats += 1
                try watch.write(
                    WatchLink.gatt(
                        milliseconds: beats * 100, characteristic: GATT.heartRateMeasurement,
                        payload: [0x00, UInt8(100 + beats % 90)]))
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        /// The watch's STOP; waits for the command to exit and returns its status.
        func stop() async throws -> Int32 {
            try watch.write(WatchLink.button(milliseconds: beats * 100 + 50, .stop))
            try #require(await waitUntil(120) { !self.process.isRunning }, "still running after STOP: \(output)")
            return process.terminationStatus
        }
    }

    /// A scratch folder with a store path and a server data folder; removed by `body`'s end.
    static func withFolder(_ body: (URL, String, String) async throws -> Void) async throws {
        let folder = try temporaryFolder("record-upload")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(
            folder, folder.appendingPathComponent("store.sqlite").path, folder.appendingPathComponent("server").path)
    }

    static func server(_ backend: Backend, data: String, port: Int = 0) throws -> ServeCommandTests.ServerProcess {
        let arguments = try backend.arguments(data: data)
        return try ServeCommandTests.ServerProcess(
            data: arguments[1], port: port, arguments: Array(arguments.dropFirst(2)))
    }

    static func addAthlete(_ name: String, data: String, backend: Backend = .sqlite) throws -> String {
        let added = try ServeCommandTests.run(["athletes", "add", name] + backend.arguments(data: data))
        try #require(added.status == 0, "\(added.output)")
        return added.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The local workout's samples as comparable lines (type, value, unit, start and end to the millisecond, source).
    static func localSamples(db: String) throws -> (UUID, [String]) {
        let store = try WorkoutStore(path: db)
        let workout = try #require(try store.workouts(matching: WorkoutQuery()).first)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let lines = try store.samples(workout: workout.id).map { sample in
            [
                sample.type.rawValue, "\(sample.quantity.value)", sample.quantity.unit.symbol,
                formatter.string(from: sample.start), formatter.string(from: sample.end), sample.source.name,
            ].joined(separator: " ")
        }
        return (workout.id, lines.sorted())
    }

    /// The server's samples of workout `id`, in the same form.
    static func serverSamples(_ base: String, id: UUID, token: String) async throws -> [String] {
        let (status, body) = try await ServeCommandTests.send(
            "GET", base + "/v1/samples?workout=\(id.uuidString)&limit=100000", token: token)
        try #require(status == 200, "GET samples: \(status) \(body)")
        let items = try #require(body["samples"] as? [[String: Any]])
        return items.compactMap { item -> String? in
            guard let sample = item["sample"] as? [String: Any], let quantity = sample["quantity"] as? [String: Any],
                let value = quantity["value"] as? Double, let unit = quantity["unit"] as? String,
                let type = sample["type"] as? String, let start = sample["start"] as? String,
                let end = sample["end"] as? String,
                let source = (sample["source"] as? [String: Any])?["name"] as? String
            else { return nil }
            return [type, "\(value)", unit, start, end, source].joined(separator: " ")
        }.sorted()
    }

    @Test func theServersWorkoutEqualsTheLocalOneSampleForSample() async throws {
        try await Self.withFolder { folder, db, data in
            let token = try Self.addAthlete("ana", data: data)
            let server = try ServeCommandTests.ServerProcess(data: data)
            defer { _ = server.signal(SIGTERM) }
            let recording = try await Recording.start(
                folder: folder, db: db, arguments: ["--upload", server.base, "--token", token])
            try await recording.beat(30)
            let status = try await recording.stop()
            #expect(status == 0, "\(recording.output)")
            #expect(recording.stdout.contains("uploaded "), "\(recording.output)")
            let (id, local) = try Self.localSamples(db: db)
            #expect(local.count >= 25, "\(local.count) samples recorded of 30 beats")
            let remote = try await Self.serverSamples(server.base, id: id, token: token)
            #expect(remote == local, "server \(remote.count) samples, local \(local.count)")
            // The same workout (the local id) on the server, finished.
            let (shown, body) = try await ServeCommandTests.send(
                "GET", server.base + "/v1/workouts/\(id.uuidString)", token: token)
            #expect(shown == 200, "\(body)")
        }
    }

    @Test(arguments: Backend.available)
    func aServerKilledMidwayCatchesUpOnRestartWithNothingLostOrDoubled(backend: Backend) async throws {
        try await Self.withFolder { folder, db, data in
            let token = try Self.addAthlete("ben", data: data, backend: backend)
            var server = try Self.server(backend, data: data)
            let port = try #require(URL(string: server.base)?.port)
            let recording = try await Recording.start(
                folder: folder, db: db, arguments: ["--upload", server.base, "--token", token])
            try await recording.beat(15)
            try #require(await waitUntil(60) { recording.output.contains("answers") }, "\(recording.output)")
            try await recording.beat(10)
            #expect(server.signal(SIGKILL) != 0)
            // The recording goes on while the server is away; the uploader notices and keeps the batches.
            try await recording.beat(20)
            try #require(await waitUntil(30) { recording.output.contains("recording goes on") }, "\(recording.output)")
            server = try Self.server(backend, data: data, port: port)
            defer { _ = server.signal(SIGTERM) }
            try await recording.beat(10)
            try #require(await waitUntil(30) { recording.output.contains("resuming after batch") }, "\(recording.output)")
            try await recording.beat(5)
            let status = try await recording.stop()
            #expect(status == 0, "\(recording.output)")
            #expect(recording.stdout.contains("uploaded "), "\(recording.output)")
            let (id, local) = try Self.localSamples(db: db)
            #expect(local.count >= recording.beats - 5, "\(local.count) samples recorded of \(recording.beats) beats")
            let remote = try await Self.serverSamples(server.base, id: id, token: token)
            #expect(remote.count == local.count, "server \(remote.count) samples, local \(local.count)")
            #expect(remote == local)
            #expect(Set(remote).count == remote.count, "a sample stored twice on the server")
        }
    }

    /// A server that stops answering (SIGSTOP: connections accepted, nothing answered) makes requests time out
    /// (10 s); the recording goes on, and once the server answers again the batches it may have taken while
    /// frozen are acknowledged as duplicates, not stored twice.
    @Test func aServerThatHangsTimesOutAndCatchesUpWithoutDoubles() async throws {
        try await Self.withFolder { folder, db, data in
            let token = try Self.addAthlete("eva", data: data)
            let server = try ServeCommandTests.ServerProcess(data: data)
            defer { _ = server.signal(SIGTERM) }
            let recording = try await Recording.start(
                folder: folder, db: db, arguments: ["--upload", server.base, "--token", token])
            try await recording.beat(10)
            try #require(await waitUntil(60) { recording.output.contains("answers") }, "\(recording.output)")
            kill(server.process.processIdentifier, SIGSTOP)
            try await recording.beat(40)
            let noticed = await waitUntil(30) { recording.output.contains("recording goes on") }
            kill(server.process.processIdentifier, SIGCONT)
            try #require(noticed, "no timeout noticed: \(recording.output)")
            try await recording.beat(5)
            let status = try await recording.stop()
            #expect(status == 0, "\(recording.output)")
            let (id, local) = try Self.localSamples(db: db)
            #expect(local.count >= recording.beats - 5, "\(local.count) samples recorded of \(recording.beats) beats")
            let remote = try await Self.serverSamples(server.base, id: id, token: token)
            #expect(remote == local, "server \(remote.count) samples, local \(local.count)")
        }
    }

    @Test func aWrongTokenStopsTheUploadButNotTheRecording() async throws {
        try await Self.withFolder { folder, db, data in
            _ = try Self.addAthlete("cat", data: data)
            let server = try ServeCommandTests.ServerProcess(data: data)
            defer { _ = server.signal(SIGTERM) }
            let wrong = "wk_" + String(repeating: "B", count: 32)
            let recording = try await Recording.start(
                folder: folder, db: db, arguments: ["--upload", server.base, "--token", wrong])
            try await recording.beat(20)
            #expect(
                await waitUntil(60) { recording.stderr.contains("upload stopped: the server refused the token") },
                "\(recording.output)")
            try await recording.beat(10)
            let status = try await recording.stop()
            #expect(status == 3, "exit status \(status): \(recording.output)")
            #expect(recording.stderr.contains("saved locally only"), "\(recording.output)")
            let (_, local) = try Self.localSamples(db: db)
            #expect(local.count >= 25, "\(local.count) samples recorded of 30 beats")
        }
    }

    @Test func aServerAwayAtTheEndIsCaughtUpByPushAndTheJSONMatchesItsSchemas() async throws {
        try await Self.withFolder { folder, db, data in
            let token = try Self.addAthlete("dan", data: data)
            // A port where a server ran: nothing answers there while recording.
            var server = try ServeCommandTests.ServerProcess(data: data)
            let base = server.base
            let port = try #require(URL(string: base)?.port)
            #expect(server.signal(SIGTERM) == 0)
            let recording = try await Recording.start(
                folder: folder, db: db, arguments: ["--upload", base, "--token", token, "--upload-wait", "1", "--json"])
            try await recording.beat(20)
            let status = try await recording.stop()
            #expect(status == 3, "exit status \(status): \(recording.output)")
            #expect(try schemaErrors(recording.stdout, schema: "record").isEmpty, "\(recording.stdout)")
            let (id, local) = try Self.localSamples(db: db)
            #expect(recording.stderr.contains("workout push \(id) --to \(base)"), "\(recording.stderr)")
            let spool = db + ".uploads/\(id.uuidString.lowercased()).json"
            #expect(FileManager.default.fileExists(atPath: spool))
            #expect(
                !((try? String(contentsOfFile: spool, encoding: .utf8)) ?? "").contains(token), "the token was written")

            server = try ServeCommandTests.ServerProcess(data: data, port: port)
            defer { _ = server.signal(SIGTERM) }
            let pushed = try runCommand(["push", id.uuidString, "--to", base, "--token", token, "--db", db, "--json"])
            #expect(pushed.status == 0, "\(pushed.stdout) \(pushed.stderr)")
            #expect(pushed.stdout.contains("\"resumed\":true"), "\(pushed.stdout)")
            #expect(try schemaErrors(pushed.stdout, schema: "push").isEmpty, "\(pushed.stdout)")
            #expect(!FileManager.default.fileExists(atPath: spool), "the spool stays after the upload finished")
            let remote = try await Self.serverSamples(base, id: id, token: token)
            #expect(remote == local, "server \(remote.count) samples, local \(local.count)")

            // Pushing again: the live workout is known by its id; a stored FIT-imported one goes as a file.
            #expect(try runCommand(["import", ServeCommandTests.sharedFIT, "--db", db]).status == 0)
            let again = try runCommand(["push", "--all", "--to", base, "--token", token, "--db", db, "--json"])
            #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
            let lines = again.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 2, "\(again.stdout)")
            for line in lines { #expect(try schemaErrors(line, schema: "push").isEmpty, "\(line)") }
            #expect(
                lines.contains { $0.contains("\"duplicate\":true") && $0.contains(id.uuidString) }, "\(again.stdout)")
            #expect(lines.contains { $0.contains("\"status\":201") }, "\(again.stdout)")
            let (_, listing) = try await ServeCommandTests.send("GET", base + "/v1/workouts", token: token)
            #expect((listing["workouts"] as? [Any])?.count == 2, "\(listing)")
        }
    }
}

extension Backend {
    /// `--db` (and `--data`) for `workout serve` and `workout athletes` with data folder `data`: SQLite files
    /// in the data folder, or the test PostgreSQL.
    func arguments(data: String) throws -> [String] {
        switch self {
        case .sqlite: return ["--db", data]
        case .postgres: return ["--db", try TestPostgres.requiredURL(), "--data", data]
        }
    }
}
