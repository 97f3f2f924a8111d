"""Chinese templates, worded after the messages and questions of MemSim's release."""

from __future__ import annotations

import datetime as dt
from typing import Mapping

from .language import Language

_WEEKDAYS = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")


def duration(days: int) -> str:
    if days % 30 == 0:
        return f"{days // 30}个月"
    if days % 7 == 0:
        return f"{days // 7}周"
    return f"{days}天"


def render(attr: str, value: object) -> str:
    if attr == "age":
        return f"{value}岁"
    if attr == "height":
        return f"{value}厘米"
    if attr == "birthday":
        month, day = str(value).split("-")
        return f"{month}月{day}日"
    if attr == "scale":
        return f"约{value}人"
    if attr == "duration":
        return duration(int(str(value)))
    return str(value)


PERSON = {
    "name": ("{ref}叫{v}。", "{ref}的名字是{v}。"),
    "gender": ("{ref}是{v}。",),
    "age": ("{ref}今年{v}。", "{ref}已经{v}了。"),
    "height": ("{ref}身高{v}。", "{ref}的身高是{v}。"),
    "birthday": ("{ref}的生日是{v}。", "{ref}是{v}出生的。"),
    "hometown": ("{ref}老家是{v}的。", "{ref}的家乡是{v}。"),
    "workplace": ("{ref}在{v}工作。", "{ref}的工作地是{v}。"),
    "education": ("{ref}的学历是{v}。", "{ref}的教育背景是{v}。"),
    "occupation": ("{ref}是一名{v}。", "{ref}的职业是{v}。"),
    "position": ("{ref}的职位是{v}。", "{ref}在单位里担任{v}。"),
    "company": ("{ref}在{v}上班。", "{ref}的工作单位是{v}。"),
    "hobby": ("{ref}的兴趣爱好是{v}。", "{ref}特别喜欢{v}。"),
    "personality": ("{ref}的性格很{v}。", "{ref}是个性格{v}的人。"),
    "phone": ("{ref}的联系电话是{v}。", "{ref}的手机号是{v}。"),
    "email": ("{ref}的邮箱地址是{v}。", "{ref}的邮箱是{v}。"),
}
USER = {
    **{k: v for k, v in PERSON.items() if k not in ("name", "gender")},
    "id_number": ("我的身份证号码是{v}。", "帮我记一下身份证号码：{v}。"),
    "passport": ("我的护照号码是{v}。", "记住我的护照号码，是{v}。"),
    "bank_card": ("我的银行卡号码是{v}。", "我那张银行卡的卡号是{v}。"),
    "license": ("我的驾驶证号码是{v}。", "帮我记一下驾驶证号码：{v}。"),
}
EVENT = {
    "type": ("{ref}是一场{v}。", "我要去参加{ref}，这是一场{v}。"),
    "content": ("{ref}的主要内容是：{v}。", "关于{ref}：{v}。"),
    "location": ("{ref}在{v}举行。", "{ref}的地点是{v}。"),
    "time": ("{ref}的时间是{v}。", "{ref}定在{v}。"),
    "scale": ("{ref}的规模是{v}。", "{ref}预计有{v}参加。"),
    "duration": ("{ref}持续{v}。", "{ref}会进行{v}。"),
}
PLACE = {
    "name": ("{ref}叫{v}。", "{ref}的名字是{v}。"),
    "comment": ("说说{ref}：{v}。", "我对{ref}的评价是：{v}。"),
}
ITEM = {
    "name": ("{ref}是{v}。", "{ref}的型号是{v}。"),
    "comment": ("说说{ref}：{v}。", "我对{ref}的评价是：{v}。"),
}

LABELS = {
    "name": "名字",
    "gender": "性别",
    "age": "年龄",
    "height": "身高",
    "birthday": "生日",
    "hometown": "家乡",
    "workplace": "工作地",
    "education": "学历",
    "occupation": "职业",
    "position": "职位",
    "company": "工作单位",
    "hobby": "兴趣爱好",
    "personality": "性格",
    "phone": "联系电话",
    "email": "邮箱地址",
    "id_number": "身份证号码",
    "passport": "护照号码",
    "bank_card": "银行卡号码",
    "license": "驾驶证号码",
    "type": "类型",
    "content": "主要内容",
    "location": "地点",
    "time": "时间",
    "scale": "规模",
    "duration": "持续时间",
    "comment": "评价",
}

SMALL_TALK = (
    "哎呀，最近天气变化真是让人捉摸不透，昨天还热得穿短袖，今天就得穿上外套了。",
    "上次朋友推荐的那个咖啡馆好像还不错，找个时间得去尝尝。",
    "今天阳光明媚，突然想起小时候过生日的场景，那时候真开心啊。",
    "隔壁的狗叫了一晚上，我今天有点没精神。",
    "衣柜早就该收拾了，可总是抽不出时间。",
    "下班路上又堵车了，真是让人头疼。",
    "昨晚看了一部关于章鱼的纪录片，它们可真聪明。",
    "阳台上的花终于开了，挪到窗边果然有用。",
    "我觉得我应该早点睡觉了。",
    "楼下超市开始卖现烤面包了，闻着就很香。",
    "说起来，我最喜欢的季节还是秋天，不冷也不热。",
    "昨天翻到一本旧相册，看了整整一个小时。",
)


def _label(kind: str, a: Mapping[str, object]) -> str:
    if kind == "user":
        return "我"
    if kind in ("relative", "colleague"):
        return f"我{a['relationship']}"
    if kind in ("work_event", "fun_event"):
        return str(a["title"])
    return f"我{a['relationship']}的{a['type']}"


def _full(kind: str, a: Mapping[str, object]) -> str:
    return f"我{a['relationship']}{a['name']}" if kind in ("relative", "colleague") else _label(kind, a)


def _name(kind: str, a: Mapping[str, object]) -> str:
    return str(a["name"]) if kind in ("relative", "colleague") else _label(kind, a)


def _when(moment: dt.datetime) -> str:
    return f"{moment:%Y}年{moment:%m}月{moment:%d}日 {_WEEKDAYS[moment.weekday()]} {moment:%H:%M}"


LANGUAGE = Language(
    code="zh",
    render=render,
    labels=LABELS,
    messages={"person": PERSON, "user": USER, "event": EVENT, "place": PLACE, "item": ITEM},
    simple_q={
        "person": ("{ref}的{label}是什么？", "你还记得{ref}的{label}吗？"),
        "user": ("我的{label}是什么？", "你还记得我的{label}吗？"),
        "other": ("{ref}的{label}是什么？", "你还记得{ref}的{label}吗？"),
    },
    cond_phrase={"person": "{label}是{v}的那个人", "event": "{label}是{v}的那个活动"},
    cond_q=("{cond}，{label}是什么？", "{cond}的{label}是什么来着？"),
    compare_q={
        ("age", "max"): "{a}和{b}谁年龄更大？",
        ("age", "min"): "{a}和{b}谁更年轻？",
        ("height", "max"): "{a}和{b}谁更高？",
        ("height", "min"): "{a}和{b}谁更矮？",
        ("birthday", "min"): "{a}和{b}谁的生日在一年中更早？",
        ("birthday", "max"): "{a}和{b}谁的生日在一年中更晚？",
        ("scale", "max"): "{a}和{b}哪个活动规模更大？",
        ("scale", "min"): "{a}和{b}哪个活动规模更小？",
        ("duration", "max"): "{a}和{b}哪个活动持续时间更长？",
        ("duration", "min"): "{a}和{b}哪个活动持续时间更短？",
    },
    same="两者一样",
    neither="都不正确",
    count_q={
        "person": "在我提到过{label}的人里，有几个人{pred}？",
        "event": "在我提到过{label}的活动里，有几个{pred}？",
    },
    count_pred={
        "age": "不到{x}岁",
        "height": "身高至少{x}厘米",
        "education": "学历在{x}及以上",
        "hometown": "老家是{x}",
        "workplace": "在{x}工作",
        "gender": "是{x}",
        "hobby": "喜欢{x}",
        "scale": "规模至少{x}人",
        "duration": "持续至少{x}天",
        "location": "在{x}举行",
    },
    count_answer=lambda k, kind: f"{k}人" if kind == "person" else f"{k}个",
    post_q={
        "digit_sum": "{cond}，其联系电话的后5位之和是多少？",
        "season": "{cond}是在哪个季节出生的？",
        "city_workplace": "{cond}，以下哪一项符合其工作地的描述？",
        "city_hometown": "{cond}，以下哪一项符合其家乡的描述？",
        "city_location": "{cond}，以下哪一项符合其举办城市的描述？",
        "days": "{cond}总共持续多少天？",
    },
    seasons=("春季", "夏季", "秋季", "冬季"),
    days=lambda n: f"{n}天",
    small_talk=SMALL_TALK,
    connectors=("我本来想问的是，", "停一下，我真正想问的是，", "对了，说正事，"),
    stamp="{text} (消息地点 {place}, 消息时间 {time})",
    when=_when,
    label_ref=_label,
    full_ref=_full,
    name_ref=_name,
    rewrite_prompt=(
        "请把下面这句话改写成用户对个人助理自然说出的话。保留其中所有事实、名字、数字和日期，"
        "不要添加任何新信息，只输出改写后的句子。\n\n句子：{text}"
    ),
)
