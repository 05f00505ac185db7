//! `SnapshotList` a page at a time over stdio, on a chat of 70 AI replies with a floor of two
//! snapshots and snapshots made without a message index: the newest page by default, `previous`
//! and `next` that walk the whole chat without a floor missed, split or listed twice, jumping
//! to one floor, the `snapshot://{chat}` resource as the default page, and bad paging
//! arguments refused with the value named.

use pretty_assertions::assert_eq;
use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use crate::common::Client;
use crate::floors::{ai, client, user};
use crate::snapshots::{ok, refused};

const CHAT: &str = "long chat";
/// AI replies in the chat, at the even message indexes 0, 2, … 138.
const REPLIES: u64 = 70;

/// The message index of each snapshot listed, `null` for those without one.
fn indexes(page: &Value) -> Vec<Value> {
    page["floors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|floor| floor["messageIndex"].clone())
        .collect()
}

/// Every page from `arguments` on, following `key` (`previous` or `next`) until there is none.
async fn walk(client: &Client, mut arguments: Value, key: &str) -> Vec<Value> {
    let mut pages = Vec::new();
    loop {
        let page = ok(client, "SnapshotList", arguments.clone()).await;
        let Some(neighbour) = page.get(key).cloned() else {
            pages.push(page);
            return pages;
        };
        arguments = json!({"chatFile": CHAT, "fromIndex": neighbour["fromIndex"], "limit": neighbour["limit"]});
        pages.push(page);
    }
}

/// The chat processed on a fresh store, with a second snapshot on floor 60 and one without a
/// message index (before message 0); the store's folder lives as long as the client.
async fn long_chat() -> (tempfile::TempDir, Client) {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let messages: Vec<Value> = (0..REPLIES)
        .flat_map(|reply| {
            [
                ai(0, &[&format!("@.ADD(\"金币\", {reply});")]),
                user("继续。"),
            ]
        })
        .collect();
    ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": CHAT, "messages": messages}),
    )
    .await;
    for message_index in [json!(60), Value::Null] {
        ok(
            &client,
            "SnapshotApply",
            json!({"chatFile": CHAT, "text": "@.SET(\"手动\", true);", "messageIndex": message_index}),
        )
        .await;
    }
    (directory, client)
}

#[tokio::test]
async fn floors_are_listed_a_page_at_a_time_and_the_pages_cover_the_chat() {
    let (_directory, client) = long_chat().await;
    let floors = REPLIES + 1;
    // Every floor on one page (uncut: the executor would cut it to the output limit).
    let everything = ok(
        &client,
        "SnapshotList",
        json!({"chatFile": CHAT, "fromIndex": 0, "limit": 1000, "_outputLimit": 0}),
    )
    .await;
    let all = indexes(&everything);
    assert_eq!(all.len() as u64, REPLIES + 2);
    assert_eq!(
        (&all[0], &all[1], &all[31], &all[32]),
        (&Value::Null, &json!(0), &json!(60), &json!(60))
    );
    assert_eq!(
        (
            everything["total"].clone(),
            everything["earlier"].clone(),
            everything["later"].clone()
        ),
        (json!(floors), json!(0), json!(0))
    );
    assert!(everything.get("previous").is_none() && everything.get("next").is_none());

    // By default the newest 30 floors, with the arguments of the page before.
    let newest = ok(&client, "SnapshotList", json!({"chatFile": CHAT})).await;
    let expected: Vec<Value> = (REPLIES - 30..REPLIES)
        .map(|reply| json!(reply * 2))
        .collect();
    assert_eq!(indexes(&newest), expected);
    assert_eq!(
        [
            &newest["total"],
            &newest["earlier"],
            &newest["later"],
            &newest["previous"]
        ],
        [
            &json!(floors),
            &json!(floors - 30),
            &json!(0),
            &json!({"fromIndex": 20, "limit": 30})
        ]
    );
    assert!(newest.get("next").is_none(), "{newest}");

    // Walking back from the newest page, and forward from the first, lists every snapshot
    // once, in order; the two snapshots of floor 60 stay on one page.
    let backward = walk(&client, json!({"chatFile": CHAT}), "previous").await;
    assert_eq!(backward.len(), 3);
    assert_eq!(backward[2]["previous"], Value::Null);
    assert_eq!(
        backward.iter().rev().flat_map(indexes).collect::<Vec<_>>(),
        all
    );
    let forward = walk(
        &client,
        json!({"chatFile": CHAT, "fromIndex": 0, "limit": 25}),
        "next",
    )
    .await;
    assert_eq!(
        forward
            .iter()
            .map(|page| page["earlier"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [0, 25, 50]
    );
    assert_eq!(forward.iter().flat_map(indexes).collect::<Vec<_>>(), all);
    assert_eq!(forward[1]["next"], json!({"fromIndex": 98, "limit": 25}));
    // A page from an index without a floor starts at the next floor.
    let from_odd = ok(
        &client,
        "SnapshotList",
        json!({"chatFile": CHAT, "fromIndex": 59, "limit": 2}),
    )
    .await;
    assert_eq!(indexes(&from_odd), [json!(60), json!(60), json!(62)]);
    assert_eq!(from_odd["previous"], json!({"fromIndex": 56, "limit": 2}));

    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_jump_says_where_the_floor_stands_the_resource_is_the_default_page_and_bad_pages_are_refused()
 {
    let (_directory, client) = long_chat().await;
    // Jumping to one floor says where it stands.
    let jumped = ok(
        &client,
        "SnapshotList",
        json!({"chatFile": CHAT, "messageIndex": 60, "limit": 10}),
    )
    .await;
    assert_eq!(indexes(&jumped), [json!(60), json!(60)]);
    assert_eq!(
        [
            &jumped["earlier"],
            &jumped["later"],
            &jumped["previous"],
            &jumped["next"]
        ],
        [
            &json!(31),
            &json!(39),
            &json!({"fromIndex": 40, "limit": 10}),
            &json!({"fromIndex": 62, "limit": 10})
        ]
    );

    // The chat's resource is the default page.
    let newest = ok(&client, "SnapshotList", json!({"chatFile": CHAT})).await;
    let uri = "snapshot://long%20chat";
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("not text: {read:?}");
    };
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), newest);

    // Bad paging arguments name the value and the fix.
    let none = refused(
        &client,
        "SnapshotList",
        json!({"chatFile": CHAT, "limit": 0}),
    )
    .await;
    assert!(
        none.contains("`limit` 0") && none.contains("1 or more"),
        "{none}"
    );
    let past = refused(
        &client,
        "SnapshotList",
        json!({"chatFile": CHAT, "fromIndex": 139}),
    )
    .await;
    assert!(
        past.contains("`fromIndex` 139") && past.contains("message 138"),
        "{past}"
    );
    let both = refused(
        &client,
        "SnapshotList",
        json!({"chatFile": CHAT, "fromIndex": 2, "messageIndex": 4}),
    )
    .await;
    assert!(both.contains("not both"), "{both}");
    client.cancel().await.unwrap();
}
