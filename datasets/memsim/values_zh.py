"""Chinese value spaces: a built-in default, and MemSim's own meta_profile.csv as an overlay.

MemSim's value spaces live in ``meta_profile.csv`` (attribute name, Python list literal
or ``None`` for attributes it generates). The file is not part of this repository, so
``-o profile=PATH`` reads it at run time and replaces the built-in lists for every
attribute it covers; what it does not cover (positions, companies, city descriptions)
always comes from the tables below.
"""

from __future__ import annotations

import ast
import csv
from pathlib import Path
from typing import Any

import attrs

from memplug.errors import DataError

from .values import ValueSpace

SURNAMES = {
    "王": "wang",
    "李": "li",
    "张": "zhang",
    "刘": "liu",
    "陈": "chen",
    "杨": "yang",
    "赵": "zhao",
    "黄": "huang",
    "周": "zhou",
    "吴": "wu",
    "徐": "xu",
    "孙": "sun",
    "胡": "hu",
    "朱": "zhu",
    "高": "gao",
    "林": "lin",
    "何": "he",
    "郭": "guo",
    "马": "ma",
    "罗": "luo",
}
GIVEN = {
    "男性": {
        "伟": "wei",
        "强": "qiang",
        "磊": "lei",
        "洋": "yang",
        "勇": "yong",
        "军": "jun",
        "杰": "jie",
        "涛": "tao",
        "志宏": "zhihong",
        "建国": "jianguo",
        "海波": "haibo",
        "俊杰": "junjie",
        "子轩": "zixuan",
        "浩然": "haoran",
        "宇航": "yuhang",
        "文博": "wenbo",
        "家豪": "jiahao",
        "立新": "lixin",
        "明辉": "minghui",
        "国强": "guoqiang",
    },
    "女性": {
        "芳": "fang",
        "娟": "juan",
        "敏": "min",
        "静": "jing",
        "丽": "li",
        "艳": "yan",
        "婷婷": "tingting",
        "雅琳": "yalin",
        "思琪": "siqi",
        "晓燕": "xiaoyan",
        "慧敏": "huimin",
        "欣怡": "xinyi",
        "梦瑶": "mengyao",
        "佳怡": "jiayi",
        "雨桐": "yutong",
        "诗涵": "shihan",
        "丽华": "lihua",
        "春梅": "chunmei",
        "秀英": "xiuying",
        "美玲": "meiling",
    },
}

CITIES = {
    "北京": "首都，政治文化中心",
    "上海": "国际都市，经济金融中心",
    "广东广州": "千年商都，以美食闻名的南方大城市",
    "广东深圳": "经济特区，科技创新的重要城市",
    "浙江杭州": "西湖风景秀丽，互联网产业发达的城市",
    "江苏南京": "六朝古都，历史文化名城",
    "山东青岛": "红瓦绿树的海滨城市，以啤酒节闻名",
    "山东济南": "泉城，以趵突泉闻名",
    "福建福州": "榕城，三坊七巷所在的城市",
    "河南郑州": "中原交通枢纽，高铁十字路口",
    "湖北武汉": "九省通衢的江城，长江与汉江交汇之地",
    "湖南长沙": "娱乐之都，以湘菜和橘子洲闻名",
    "四川成都": "天府之国，以美食和大熊猫闻名",
    "重庆": "山城，以火锅和夜景闻名",
    "天津": "北方港口城市，以相声闻名",
    "河北石家庄": "华北铁路枢纽，被称为火车拉来的城市",
    "山西太原": "龙城，以面食和煤炭工业闻名",
    "辽宁沈阳": "东北重工业基地，清朝发祥地",
    "吉林长春": "汽车城，以电影制片厂闻名",
    "黑龙江哈尔滨": "冰城，以冰雪大世界闻名",
    "江西南昌": "英雄城，八一起义的发生地",
    "安徽合肥": "大湖名城，科教基地",
    "江苏苏州": "以园林闻名的江南水乡",
    "浙江宁波": "港口城市，宁波舟山港所在地",
    "福建厦门": "海上花园，鼓浪屿所在的城市",
}
WORK_CITIES = ("北京", "上海", "广东广州", "广东深圳", "江苏南京", "浙江杭州", "山东青岛")
EDUCATION = ("高中", "专科", "本科", "硕士", "博士")

OCCUPATIONS = {
    "医生": (2, ("住院医师", "主治医师"), ("主任医师", "副院长"), ("人民医院", "中心医院")),
    "教师": (2, ("语文教师", "数学教师"), ("教研组长", "副校长"), ("第一中学", "实验小学")),
    "工程师": (1, ("助理工程师", "工艺工程师"), ("高级工程师", "总工程师"), ("工程有限公司", "科技有限公司")),
    "律师": (2, ("实习律师", "执业律师"), ("合伙人", "律所主任"), ("律师事务所", "法律咨询中心")),
    "警察": (0, ("民警", "刑警"), ("警长", "派出所所长"), ("公安分局", "派出所")),
    "护士": (1, ("护士", "护师"), ("护士长", "护理部主任"), ("人民医院", "社区卫生院")),
    "厨师": (0, ("帮厨", "面点师"), ("厨师长", "行政总厨"), ("大酒店", "餐饮有限公司")),
    "程序员": (1, ("初级开发工程师", "后端开发工程师"), ("技术主管", "研发总监"), ("网络科技有限公司", "软件有限公司")),
    "销售人员": (0, ("销售代表", "客户经理"), ("销售经理", "销售总监"), ("贸易有限公司", "商贸有限公司")),
    "会计": (1, ("出纳", "会计专员"), ("会计主管", "财务经理"), ("会计师事务所", "财务咨询有限公司")),
    "银行柜员": (0, ("柜员", "大堂经理助理"), ("柜员主管", "支行行长"), ("银行", "金融服务中心")),
    "设计师": (1, ("平面设计师", "UI设计师"), ("设计主管", "设计总监"), ("设计工作室", "创意设计有限公司")),
    "记者": (2, ("记者", "编辑"), ("首席记者", "总编辑"), ("日报社", "传媒集团")),
    "快递员": (0, ("快递员", "派件员"), ("站点主管", "网点经理"), ("快递公司", "物流有限公司")),
    "建筑工人": (0, ("瓦工", "木工"), ("施工队长", "项目经理"), ("建设有限公司", "建筑工程有限公司")),
    "翻译员": (2, ("笔译员", "口译员"), ("高级翻译", "翻译部主任"), ("翻译服务有限公司", "语言服务中心")),
}
COMPANY_WORDS = {
    "华银": "huayin",
    "星辰": "xingchen",
    "宏达": "hongda",
    "恒信": "hengxin",
    "东方": "dongfang",
    "金鼎": "jinding",
    "卓越": "zhuoyue",
    "远航": "yuanhang",
    "天成": "tiancheng",
    "瑞丰": "ruifeng",
    "博雅": "boya",
    "新纪元": "xinjiyuan",
}
HOBBIES = (
    "阅读",
    "旅游",
    "运动",
    "听音乐",
    "看电影",
    "绘画",
    "摄影",
    "舞蹈",
    "瑜伽",
    "健身",
    "美食烹饪",
    "园艺",
    "手工艺",
    "模型制作",
    "集邮",
    "跑步",
    "自行车骑行",
    "游泳",
    "登山",
    "攀岩",
    "钓鱼",
    "打高尔夫球",
    "下棋",
    "玩电子游戏",
    "编程",
    "学习外语",
    "写作",
    "书法",
    "戏剧",
    "听音乐会",
)
PERSONALITIES = ("乐观", "内向", "热情", "耐心", "外向")
PHONE_PREFIXES = ("198", "155", "134", "136", "185", "132", "184", "153")
BANK_PREFIXES = ("622126", "622202", "622848", "622908", "622168", "622384", "622588", "622155")

RELATIVES = {
    "父亲": ("男性", 22, 35, True),
    "母亲": ("女性", 20, 33, False),
    "表哥": ("男性", 1, 8, False),
    "表姐": ("女性", 1, 8, False),
    "表弟": ("男性", -8, -1, False),
    "表妹": ("女性", -8, -1, False),
    "叔叔": ("男性", 3, 20, True),
    "婶婶": ("女性", 3, 20, False),
    "舅舅": ("男性", 3, 20, False),
    "舅妈": ("女性", 3, 20, False),
}
COLLEAGUES = {"上司": (3, 15, True), "下属": (-12, -2, False), "同事": (-6, 6, False)}

WORK_EVENT_TYPES = {
    "商业会议": "回顾季度业绩并商定下一步计划",
    "职业培训": "跟着资深讲师学习新技能",
    "招聘会": "与用人单位交流空缺岗位",
    "产品发布会": "第一时间了解新产品",
    "行业交流会": "探讨行业趋势，分享从业经验",
    "公司团建": "参加户外拓展，增进团队凝聚力",
    "年终总结大会": "回顾全年工作并颁发奖项",
    "项目启动会": "明确目标，分配新项目的任务",
    "学术交流会": "聆听报告并展示最新研究",
    "创新研讨会": "头脑风暴并快速做出原型",
}
FUN_EVENT_TYPES = {
    "旅行": "结伴出游，参观当地名胜",
    "阅读": "共读一本书并交流心得",
    "看电影": "一起看电影，散场后聊聊感想",
    "健身": "在教练带领下一起锻炼",
    "美食节": "品尝各地摊主的特色美食",
    "音乐会": "欣赏多支乐队的现场演出",
    "艺术展览": "欣赏本地艺术家的作品",
    "朋友聚会": "和朋友们吃饭、玩游戏、叙旧",
    "逛街购物": "逛街淘好物",
    "户外徒步": "沿风景优美的步道徒步，欣赏沿途风光",
}
WEEKDAYS = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
WEEKS = ("这", "下", "下下")
HOURS = ("上午九点", "上午十点", "下午两点", "下午三点", "晚上七点", "晚上八点")

PLACES = {
    "小区": ("阳光小区", "绿洲家园", "世纪花园", "锦绣江南", "幸福家园", "金色家园"),
    "公园": ("深圳湾公园", "莲花山公园", "东湖公园", "中心公园", "人民公园", "园博园"),
    "商场": ("万达广场", "大悦城", "恒隆广场", "银泰百货", "万象城", "印象城"),
    "医院": ("人民医院", "中医院", "妇幼保健院", "口腔医院", "眼科医院", "骨科医院"),
    "景区": ("欢乐谷", "世界之窗", "民俗文化村", "海洋世界", "野生动物园", "欢乐海岸"),
}
PLACE_RELATIONS = {
    "小区": ("居住",),
    "公园": ("参观", "路过"),
    "商场": ("参观", "路过"),
    "医院": ("参观", "路过"),
    "景区": ("参观", "路过"),
}
PLACE_PROS = ("环境干净又安静", "工作人员很热情", "坐地铁过去很方便", "绿化特别好", "早上人不多")
PLACE_CONS = ("停车位不好找", "周末有点吵", "吃饭的地方太少", "指示牌不太清楚", "关门太早")

ITEMS = {
    "手机": ("苹果iPhone 13", "苹果iPhone 14", "华为Mate 60", "华为P50", "小米12", "OPPO Find X3"),
    "家电": ("小米电视4A", "格力空调", "海尔冰箱", "美的电饭煲", "西门子洗衣机", "戴森吸尘器"),
    "美妆": ("兰蔻奇迹香水", "雅诗兰黛小棕瓶", "魅可子弹头唇膏", "迪奥真我香水", "倩碧特效润肤露", "SK-II护肤精华露"),
    "运动鞋": (
        "耐克Air Zoom Pegasus",
        "阿迪达斯UltraBoost",
        "亚瑟士Gel-Kayano 26",
        "新百伦Fresh Foam 1080v10",
        "彪马Jam Spark",
        "斯凯奇Go Walk 5",
    ),
}
ITEM_RELATIONS = ("喜欢", "拥有", "使用")
ITEM_PROS = ("用起来特别顺手", "颜值很高", "性价比不错", "非常舒适", "操作简单")
ITEM_CONS = ("续航再长一点就好了", "有点重", "容易刮花", "声音有点大", "颜色容易褪")

_MAGNITUDES = {"十人": 10, "百人": 100, "千人": 1000}
_UNITS = {"天": 1, "周": 7, "月": 30}

SPACE = ValueSpace(
    lang="zh",
    first_names={g: tuple(names) for g, names in GIVEN.items()},
    surnames=tuple(SURNAMES),
    full_names=(),
    cities=CITIES,
    work_cities=WORK_CITIES,
    education=EDUCATION,
    occupations=OCCUPATIONS,
    company_words=tuple(COMPANY_WORDS),
    hobbies=HOBBIES,
    personalities=PERSONALITIES,
    phone_prefixes=PHONE_PREFIXES,
    bank_prefixes=BANK_PREFIXES,
    relatives=RELATIVES,
    colleagues=COLLEAGUES,
    work_event_types=WORK_EVENT_TYPES,
    fun_event_types=FUN_EVENT_TYPES,
    weekdays=WEEKDAYS,
    weeks=WEEKS,
    hours=HOURS,
    places=PLACES,
    place_relations=PLACE_RELATIONS,
    place_pros=PLACE_PROS,
    place_cons=PLACE_CONS,
    items=ITEMS,
    item_relations=ITEM_RELATIONS,
    item_pros=ITEM_PROS,
    item_cons=ITEM_CONS,
    scales=tuple(k * m for m in (10, 100, 1000) for k in range(1, 10)),
    duration_units=(1, 7, 30),
    genders=("男性", "女性"),
    romanized={**SURNAMES, **{k: v for names in GIVEN.values() for k, v in names.items()}, **COMPANY_WORDS},
)


def read_meta_profile(path: Path) -> dict[str, list[str] | None]:
    """Rows of MemSim's meta_profile.csv: attribute name -> list of values (None = generated)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DataError(path, f"cannot read the value-space file ({exc.strerror or exc})") from None
    rows: dict[str, list[str] | None] = {}
    for line_no, row in enumerate(csv.reader(text.splitlines()), start=1):
        if line_no == 1 or not row:
            continue
        if len(row) != 2:
            raise DataError(path, f"expected 2 columns (attribute, range), got {len(row)}", f"line {line_no}")
        name, raw = row[0].strip(), row[1].strip()
        if raw == "None":
            rows[name] = None
            continue
        try:
            values = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            raise DataError(path, f"range of {name!r} is not a list literal", f"line {line_no}") from None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values) or not values:
            raise DataError(path, f"range of {name!r} must be a non-empty list of strings", f"line {line_no}")
        rows[name] = [v.strip() for v in values]
    return rows


def space_from_profile(path: Path, base: ValueSpace = SPACE) -> ValueSpace:
    """The built-in Chinese space with every list that meta_profile.csv gives replaced by the file's."""
    rows = read_meta_profile(path)

    def given(name: str) -> list[str] | None:
        return rows.get(name) or None

    changes: dict[str, Any] = {}
    if names := given("姓名"):
        changes["full_names"] = tuple(names)
    if (genders := given("性别")) and len(genders) == 2:
        changes["genders"] = tuple(genders)
    if hometowns := given("家乡"):
        changes["hometowns"] = tuple(hometowns)
    if cities := given("工作地"):
        changes["work_cities"] = tuple(cities)
    if levels := given("教育背景"):
        # keep MemSim's levels in the built-in low-to-high order; unknown levels go last
        changes["education"] = tuple(
            sorted(levels, key=lambda v: base.education.index(v) if v in base.education else 99)
        )
    if occupations := given("职业"):
        changes["occupations"] = {
            occ: base.occupations.get(occ, (0, (occ,), (f"高级{occ}",), ("有限公司",))) for occ in occupations
        }
    for csv_name, field in (
        ("兴趣爱好", "hobbies"),
        ("性格", "personalities"),
        ("联系电话", "phone_prefixes"),
        ("银行卡号码", "bank_prefixes"),
        ("物品关系", "item_relations"),
    ):
        if listed := given(csv_name):
            changes[field] = tuple(listed)
    if relatives := given("亲属关系"):
        changes["relatives"] = {r: base.relatives.get(r, (None, -6, 6, False)) for r in relatives}
    if colleagues := given("同事关系"):
        changes["colleagues"] = {r: base.colleagues.get(r, (-6, 6, False)) for r in colleagues}
    for csv_name, field in (("工作事件类型", "work_event_types"), ("休闲事件类型", "fun_event_types")):
        if types := given(csv_name):
            table = getattr(base, field)
            changes[field] = {t: table.get(t, f"参加{t}的各项活动") for t in types}
    if scales := given("规模"):
        mags = [_MAGNITUDES[s] for s in scales if s in _MAGNITUDES]
        if mags:
            changes["scales"] = tuple(k * m for m in mags for k in range(1, 10))
    if durations := given("持续时间"):
        units = [_UNITS[s] for s in durations if s in _UNITS]
        if units:
            changes["duration_units"] = tuple(units)
    if item_types := given("物品类型"):
        changes["items"] = {t: tuple(given(t) or base.items.get(t, (t,))) for t in item_types}
    if place_types := given("地点类型"):
        rels = tuple(rows.get("地点关系") or ("参观",))
        places, place_rel = {}, {}
        for t in place_types:
            places[t] = tuple(given(t) or base.places.get(t, (t,)))
            wanted = base.place_relations.get(t, tuple(r for r in rels if r != "居住"))
            place_rel[t] = tuple(r for r in wanted if r in rels) or rels
        changes["places"], changes["place_relations"] = places, place_rel
    return attrs.evolve(base, **changes)
