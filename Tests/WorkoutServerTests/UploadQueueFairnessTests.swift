import Foundation
import Synchronization
import Testing

@testable import WorkoutServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The upload queue and the store threads are shared fairly between athletes (issue 27: 67 uploads of one athlete
/// made another athlete's 14 KB upload wait 24 s): waiting work is served one athlete after the other, and an
/// athlete with its share in flight is answered 429 with Retry-After.
@Suite("upload queue fairness", .serialized)
struct UploadQueueFairnessTests {
    /// A FIT file made unique: the header's profile version set to `variant` (its header CRC cleared, which
    /// the protocol allows) and the file CRC written again, so each variant is another upload and workout.
    static func variant(_ fit: Data, _ variant: UInt16) -> Data {
        var bytes = [UInt8](fit)
        bytes[2] = UInt8(variant & 0xFF)
        bytes[3] = UInt8(variant >> 8)
        if bytes[0] >= 14 {
            bytes[12] = 0
            bytes[13] = 0
        }
        let end = bytes.count - 2
        let crc = fitCRC(bytes[0..<end])
        bytes[end] = UInt8(crc & 0xFF)
        bytes[end + 1] = UInt8(crc >> 8)
        return Data(bytes)
    }

    /// The FIT protocol's CRC-16 (the FIT SDK's table).
    static func fitCRC(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        let table: [UInt16] = [
            0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401, 0xA001, 0x6C00, 0x7800, 0xB401, 0x5000,
            0x9C01, 0x8801, 0x4400,
        ]
        var crc: UInt16 = 0
        for byte in bytes {
            var tmp = table[Int(crc & 0xF)]
            crc = (crc >> 4) & 0x0FFF
            crc = crc ^ tmp ^ table[Int(byte & 0xF)]
            tmp = table[Int(crc & 0xF)]
            crc = (crc >> 4) & 0x0FFF
            crc = crc ^ tmp ^ table[Int((byte >> 4) & 0xF)]
        }
        return crc
    }

    /// POSTs `body` as an upload; the status and the Retry-After header.
    static func upload(_ server: TestServer, token: String, body: Data) async throws -> (status: Int, retryAfter: String?) {
        var request = URLRequest(url: try #require(URL(string: server.base + "/v1/workouts")))
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        request.timeoutInterval = 600
        let client = URLSession(configuration: .ephemeral)
        let (_, response) = try await client.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, http.value(forHTTPHeaderField: "Retry-After"))
    }

    @Test func waitingWorkIsServedOneKeyAfterTheOtherNotFirstComeFirstServed() async throws {
        let pool = FairPool(threads: 1, perKeyThreads: 1, perKeyQueue: 10, totalQueue: 100)
        let order = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        // The only thread is held by athlete a's first job while a queues four more, then b one.
        #expect(pool.submit(key: "a") { release.wait(); order.withLock { $0.append("a1") }; done.signal() } != nil)
        for index in 2...5 {
            #expect(pool.submit(key: "a") { order.withLock { $0.append("a\(index)") }; done.signal() } != nil)
        }
        #expect(pool.submit(key: "b") { order.withLock { $0.append("b1") }; done.signal() } != nil)
        release.signal()
        for _ in 0..<6 { done.wait() }
        let served = order.withLock { $0 }
        let b = try #require(served.firstIndex(of: "b1"))
        // b waits behind at most the job of a that was running and the next of a's in turn, not behind all of them.
        #expect(b <= 2, "served in the order \(served)")
        #expect(served.filter { $0.hasPrefix("a") } == ["a1", "a2", "a3", "a4", "a5"], "a's own jobs in order: \(served)")
    }

    @Test func aKeyWithItsShareWaitingIsRefusedAndOthersAreNot() {
        let pool = FairPool(threads: 1, perKeyThreads: 1, perKeyQueue: 3, totalQueue: 100)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        #expect(pool.submit(key: "a") { release.wait(); done.signal() } != nil)
        #expect(pool.submit(key: "a") { done.signal() } != nil)
        #expect(pool.submit(key: "a") { done.signal() } != nil)
        #expect(pool.submit(key: "a") { done.signal() } == nil, "a's fourth call is over its share of 3")
        #expect(pool.load(of: "a") == 3)
        #expect(pool.submit(key: "b") { done.signal() } != nil, "b is not refused for a's calls")
        release.signal()
        for _ in 0..<4 { done.wait() }
        // Each job signals before the pool has counted it done: wait (bounded) for the count.
        _ = waitFor(10, every: 0.001) { pool.load(of: "a") + pool.load(of: "b") == 0 }
        #expect(pool.load(of: "a") == 0 && pool.load(of: "b") == 0)
    }

    @Test func oneAthletesFloodOfUploadsIsRefusedPastItsShareAndAnotherAthletesUploadIsImported() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let flooder = try server.directory.addAthlete(name: "flo").token
        let other = try server.directory.addAthlete(name: "oli").token
        // A file whose import takes a moment (a ride, 259 KB), in variants so that each upload is a new file.
        let large = try SharedData.bytes("fp_coros-pace-2-cycling")
        let small = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let flood = 3 * Offload.uploadsPerAthlete
        let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<flood {
                group.addTask {
                    let answer = try await Self.upload(server, token: flooder, body: Self.variant(large, UInt16(100 + index)))
                    return (answer.status, answer.retryAfter)
                }
            }
            var answers: [(Int, String?)] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        let refused = answers.filter { $0.0 == 429 }
        #expect(!refused.isEmpty, "\(flood) uploads at once, none refused: \(answers.map(\.0))")
        #expect(refused.allSatisfy { $0.1.flatMap(Int.init) ?? 0 > 0 }, "every 429 says when to retry")
        #expect(answers.allSatisfy { $0.0 == 201 || $0.0 == 429 }, "\(answers.map(\.0))")
        #expect(answers.filter { $0.0 == 201 }.count >= Offload.uploadsPerAthlete, "its share was imported")

        // While the flooder fills its share again, the other athlete's upload is taken, not refused.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<Offload.uploadsPerAthlete {
                group.addTask {
                    _ = try await Self.upload(server, token: flooder, body: Self.variant(large, UInt16(200 + index)))
                }
            }
            let answer = try await Self.upload(server, token: other, body: small)
            #expect(answer.status == 201, "the other athlete's upload: \(answer.status)")
            try await group.waitForAll()
        }
        await server.stop()
    }
}
