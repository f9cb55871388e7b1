import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutServer
import WorkoutUpload

/// `LiveUploader` reopening a session on a real server (SQLite) whose state went back: a server restored from a
/// copy taken before the batches were acknowledged.
@Suite("Live upload: resuming on a server that lost acknowledged batches", .serialized)
struct LiveUploaderResumeTests {
    private static func t(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: 800_000_000 + seconds) }

    /// Every batch acknowledged, then the server comes back without them (nothing left to send): the uploader
    /// refuses before finishing, saying the server lost acknowledged batches (it used to send the finish and
    /// report the server's "send an 'end' item" instead), and nothing is saved.
    @Test func aServerHoldingFewerBatchesThanAcknowledgedIsRefusedEvenWithNothingPending() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("uploader-resume-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        let first = root.appendingPathComponent("first").path
        let copy = root.appendingPathComponent("copy").path
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)

        // The athlete and token, then a copy of the data folder before any session.
        var server = try await TestServer.start(folder: first)
        let (_, token) = try server.directory.addAthlete(name: "ana")
        await server.stop()
        try FileManager.default.copyItem(atPath: first, toPath: copy)
        server = try await TestServer.start(folder: first)
        let port = try #require(URL(string: server.base)?.port)

        let sink = InMemoryRecording()
        let configuration = WorkoutConfiguration(activityType: .running, locationType: .outdoor)
        let session = try WorkoutSession(configuration: configuration, clock: ManualClock(Self.t(0)), sink: sink)
        try session.start(at: Self.t(0))
        let strap = SourceDevice(name: "HRM", manufacturer: "Garmin", identifier: "ant:120:1")
        _ = try session.builder.add(
            (0..<30).map { QuantitySample(.heartRate, 120 + Double($0), at: Self.t(Double($0)), source: strap) })
        try session.stop(at: Self.t(30))
        try session.end(at: Self.t(30))
        let changes = sink.changes.filter { if case .finished = $0 { return false } else { return true } }

        var settings = UploadSettings()
        settings.initialBackoff = 0.1
        settings.maximumBackoff = 0.3
        settings.requestTimeout = 5
        let target = try #require(UploadTarget(server: server.base, token: token))
        let uploader = LiveUploader(
            target: target, session: UUID(), setup: SessionSetup(configuration), settings: settings)
        uploader.start()
        uploader.committed(changes)
        #expect(await waitUntil(60) { uploader.acknowledgedBatches >= 1 && uploader.pendingBatches == 0 })

        // The server goes away while the uploader finishes, and comes back from the copy on the same port.
        await server.stop()
        uploader.requestFinish()
        #expect(await waitUntil(60) { uploader.reachable == false })
        let restored = try await TestServer.start(folder: copy) { $0.port = port }
        let outcome = await uploader.outcome(timeout: 60)
        let listing = try await restored.send("GET", "/v1/workouts", token: token)
        await restored.stop()
        guard case .refused(let problem) = outcome else {
            Issue.record("the upload ended \(outcome) on a server without its acknowledged batches")
            return
        }
        #expect(problem.contains("acknowledged"), "\(problem)")
        #expect(listing.status == 200)
        #expect((listing.json["workouts"] as? [Any])?.isEmpty == true, "a short workout was saved: \(listing.text)")
    }
}
