import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutServer
import WorkoutStore

/// FIT uploads: imported through the live engine, one workout per file content, bad files refused with a typed
/// error and nothing stored.
@Suite("server uploads", .serialized)
struct UploadTests {
    static func workoutIDs(_ server: TestServer, token: String) async throws -> [String] {
        let listed = try await server.send("GET", "/v1/workouts", token: token)
        return ((listed.json["workouts"] as? [[String: Any]]) ?? []).compactMap {
            ($0["workout"] as? [String: Any])?["id"] as? String
        }
    }

    @Test(arguments: Backend.available)
    func theSameFileUploadedTwiceIsOneWorkoutWithTheEnginesStatistics(_ backend: Backend) async throws {
        let server = try await TestServer.start(backend: backend)
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "erin").token
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let first = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        #expect(first.status == 201, "\(first.text)")
        #expect(first.json["duplicate"] as? Bool == false)
        let workout = try #require(first.json["workout"] as? [String: Any])
        let id = try #require(workout["id"] as? String)
        // The engine's figures: a heart-rate average computed from the file's samples.
        let heartRate = (workout["statistics"] as? [String: Any])?["heartRate"] as? [String: Any]
        #expect((heartRate?["average"] as? [String: Any])?["value"] as? Double ?? 0 > 40)
        let second = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        #expect(second.status == 200 && second.json["duplicate"] as? Bool == true, "\(second.text)")
        #expect((second.json["workout"] as? [String: Any])?["id"] as? String == id)
        #expect(try await Self.workoutIDs(server, token: token) == [id])
        let samples = try await server.send("GET", "/v1/samples?workout=\(id)&type=heartRate&limit=5", token: token)
        #expect((samples.json["samples"] as? [Any])?.count == 5)
        let shown = try await server.send("GET", "/v1/workouts/\(id)", token: token)
        #expect(shown.status == 200 && (shown.json["workout"] as? [String: Any])?["id"] as? String == id)
        #expect(try await server.send("DELETE", "/v1/workouts/\(id)", token: token).status == 204)
        #expect(try await server.send("GET", "/v1/workouts/\(id)", token: token).status == 404)
        #expect(try await server.send("DELETE", "/v1/workouts/\(id)", token: token).status == 404)
        await server.stop()
    }

    @Test(arguments: Backend.available)
    func truncatedRandomAndEmptyFilesAreRefusedAndNothingIsStored(_ backend: Backend) async throws {
        let server = try await TestServer.start(backend: backend)
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "finn").token
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        var generator = SystemRandomNumberGenerator()
        let random = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
        for (name, body, code) in [
            ("truncated", fit.prefix(fit.count / 2), "invalid_fit"), ("random", random, "invalid_fit"),
            ("header only", fit.prefix(14), "invalid_fit"), ("empty", Data(), "empty_upload"),
        ] {
            let answer = try await server.send("POST", "/v1/workouts", token: token, body: Data(body))
            #expect(answer.status >= 400 && answer.status < 500 && answer.errorCode == code, "\(name): \(answer.text)")
            #expect(answer.errorMessage?.isEmpty == false)
        }
        #expect(try await Self.workoutIDs(server, token: token).isEmpty)
        #expect(try await server.send("GET", "/health", token: nil).status == 200)
        await server.stop()
    }

    /// An Apple Health export holds many workouts; the upload answers for one: refused whole (before, every
    /// workout was stored and the answer covered the first only, here a 422 for its 8-day first workout).
    @Test func anAppleHealthExportIsRefusedWholeSayingToUseWorkoutImport() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "hana").token
        func workout(_ start: String, _ end: String, _ minutes: Int) -> String {
            "<Workout workoutActivityType=\"HKWorkoutActivityTypeRunning\" duration=\"\(minutes)\" durationUnit=\"min\" "
                + "sourceName=\"W\" startDate=\"\(start)\" endDate=\"\(end)\"/>\n"
        }
        let export = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<HealthData locale=\"en_US\">\n"
            + workout("2020-01-01 00:00:00 +0000", "2020-01-09 00:00:00 +0000", 11_520)
            + workout("2020-02-01 10:00:00 +0000", "2020-02-01 10:30:00 +0000", 30) + "</HealthData>\n"
        let answer = try await server.send("POST", "/v1/workouts", token: token, body: Data(export.utf8))
        #expect(answer.status == 422 && answer.errorCode == "invalid_fit", "\(answer.text)")
        #expect(answer.errorMessage?.contains("workout import") == true, "\(answer.text)")
        #expect(try await Self.workoutIDs(server, token: token).isEmpty)
        await server.stop()
    }

    @Test("imports run on threads of lower priority (nice 10) than the threads that acknowledge live batches")
    func importsRunAtALowerPriority() async throws {
        /// The nice values of this process's threads (field 19 of /proc/self/task/*/stat, after the command).
        func niceValues() throws -> [Int] {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { task in
                guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { return nil }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                return fields.count > 16 ? Int(fields[16]) : nil
            }
        }
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "ann").token
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let uploaded = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        #expect(uploaded.status == 201, "\(uploaded.text)")
        let nice = try niceValues()
        #expect(nice.contains(10), "\(nice)")
        #expect(nice.filter { $0 == 0 }.count > nice.filter { $0 == 10 }.count, "only the upload threads: \(nice)")
        await server.stop()
    }

    @Test func aBodyOverTheLimitIsRefusedWith413AndTheServerKeepsServing() async throws {
        let server = try await TestServer.start(bodyLimit: 10_000)
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "gus").token
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        #expect(fit.count > 10_000)
        let answer = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        #expect(answer.status == 413 && answer.errorCode == "body_too_large", "\(answer.text)")
        #expect(answer.errorMessage?.contains("10000") == true)
        #expect(try await Self.workoutIDs(server, token: token).isEmpty)
        #expect(try await server.send("GET", "/ready", token: nil).status == 200)
        let metrics = try await server.send("GET", "/metrics", token: nil)
        #expect(metrics.text.contains("workout_bodies_too_large_total 1"), "\(metrics.text)")
        await server.stop()
    }

    @Test func unknownEndpointsAndMethodsAnswerWithTypedJSONErrors() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "hal").token
        let missing = try await server.send("GET", "/v1/nothing", token: token)
        #expect(missing.status == 404 && missing.errorCode == "not_found", "\(missing.text)")
        let unknownParameter = try await server.send("GET", "/v1/workouts?colour=red", token: token)
        #expect(unknownParameter.status == 400 && unknownParameter.errorCode == "unknown_parameter")
        #expect(try await server.send("GET", "/health", token: nil).json["status"] as? String == "ok")
        await server.stop()
    }

    @Test func anImportCutShortByAStopDoesNotBlockTheSameFileForever() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        // The file's workout id for this athlete (it comes from the file and the athlete), then deleted.
        let (athlete, token) = try server.directory.addAthlete(name: "hal")
        let uploaded = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        let id = try #require(UUID(uuidString: (uploaded.json["workout"] as? [String: Any])?["id"] as? String ?? ""))
        #expect(try await server.send("DELETE", "/v1/workouts/\(id)", token: token).status == 204)
        // What a server stopped in the middle of an upload leaves in the athlete's store: the import's journal.
        let store = try WorkoutStore(path: server.folder + "/athletes/\(athlete.id.uuidString.lowercased()).sqlite")
        let cut = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), options: BuilderOptions(workoutID: id),
            commitInterval: 0)
        try cut.close()

        let first = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        #expect(first.status == 201 && first.json["duplicate"] as? Bool == false, "\(first.status) \(first.text)")
        let second = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        #expect(second.status == 200 && second.json["duplicate"] as? Bool == true, "\(second.status) \(second.text)")
        #expect(try await Self.workoutIDs(server, token: token) == [id.uuidString])
        await server.stop()
    }
}
